"""Cluster: the AKS control plane and kubeconfig, the resource group, the CPU pool and what every autoscaled pool
shares, the registry, and the Azure Policy pod security baseline."""
