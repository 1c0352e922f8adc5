"""Cluster: the AKS control plane and kubeconfig, the resource group, the CPU pool and what every autoscaled pool
shares, and the Azure Policy pod security baseline."""
