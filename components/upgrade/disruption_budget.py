"""PodDisruptionBudgets: how many of a workload's pods a node drain (an upgrade) may evict at once."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.upgrade.section import DisruptionBudgetConfig


def pod_disruption_budget(
    name: str,
    budget: DisruptionBudgetConfig,
    provider: k8s.Provider,
    cluster: pulumi.Resource,
    parent: pulumi.Resource | None = None,
) -> k8s.policy.v1.PodDisruptionBudget:
    """A policy/v1 PDB keeping `minAvailable` of the selected pods up; refuses minAvailable >= replicas.

    `budget` is one `upgrade.disruptionBudgets` entry (validated: minAvailable below replicas);
    `provider` and `cluster` are the AksCluster's Kubernetes provider and ManagedCluster.
    """
    return k8s.policy.v1.PodDisruptionBudget(
        name,
        metadata={
            "name": budget.name,
            "namespace": budget.namespace,
            "labels": {"app.kubernetes.io/managed-by": "pulumi"},
        },
        spec={"min_available": budget.min_available, "selector": {"match_labels": dict(budget.selector)}},
        # The object lives in the cluster: deleting the cluster deletes it, no separate delete call.
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, deleted_with=cluster),
    )
