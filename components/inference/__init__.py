"""Inference: KEDA scaling on the metrics of a workload, and the sample inference server."""
