"""Inference: the KEDA add-on, scaling targets and the sample inference workload (`autoscaling`)."""
