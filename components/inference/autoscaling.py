"""KEDA scaling of one Deployment on the GPU utilisation that DCGM reports to managed Prometheus."""

from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.inference.section import ScalingTargetConfig

from ..monitoring import metrics_labels as labels
from ..shared import roles
from ..shared.context import ClusterHandle
from ..shared.workload_identity import federated_identity, service_account_subject

KEDA_API_VERSION = "keda.sh/v1alpha1"
# The AKS KEDA add-on runs its operator under this service account; tokens it presents carry this subject.
KEDA_NAMESPACE, KEDA_SERVICE_ACCOUNT = "kube-system", "keda-operator"
KEDA_OPERATOR_SUBJECT = service_account_subject(KEDA_NAMESPACE, KEDA_SERVICE_ACCOUNT)
GPU_UTILIZATION_METRIC = "DCGM_FI_DEV_GPU_UTIL"


def gpu_utilization_query(namespace: str, deployment: str) -> str:
    """PromQL: average GPU utilisation (0-100) over the Deployment's pods (ReplicaSet hash + pod suffix).

    The pod holding a GPU is in DCGM's pod mapping, stored under the label contract's workload labels
    (`exported_namespace`/`exported_pod`); plain `namespace`/`pod` name the exporter pod.
    """
    pods = f"{deployment}-[a-z0-9]+-[a-z0-9]+"
    matchers = f'{labels.WORKLOAD_NAMESPACE}="{namespace}",{labels.WORKLOAD_POD}=~"{pods}"'
    return f"avg({GPU_UTILIZATION_METRIC}{{{matchers}}})"


class KedaWiringArgs(TypedDict):
    """What every KEDA-scaled GPU workload needs from the cluster and the monitoring stack."""

    cluster: ClusterHandle
    """The cluster: its OIDC issuer is trusted by the federated credential, and its KEDA add-on installs the
    ScaledObject and TriggerAuthentication CRDs."""
    monitor_workspace_id: pulumi.Input[str]
    """Azure Monitor workspace holding the DCGM metrics; the identity may read it and nothing else."""
    prometheus_query_endpoint: pulumi.Input[str]
    """The workspace's Prometheus query endpoint, KEDA's `serverAddress`."""


def keda_metadata(object_name: str, namespace: str) -> dict[str, object]:
    return {"name": object_name, "namespace": namespace, "labels": {"app.kubernetes.io/managed-by": "pulumi"}}


def keda_object_options(parent: pulumi.Resource, handle: ClusterHandle) -> pulumi.ResourceOptions:
    """KEDA installs its CRDs; without the add-on (or before it exists) the objects cannot be created."""
    return pulumi.ResourceOptions.merge(handle.k8s_options(parent), pulumi.ResourceOptions(depends_on=[handle.cluster]))


def keda_trigger_authentication(
    parent: pulumi.Resource, name: str, args: KedaWiringArgs, identity_name: str, object_name: str, namespace: str
) -> tuple[k8s.apiextensions.CustomResource, Any]:
    """The identity KEDA queries managed Prometheus as (Monitoring Data Reader on the workspace, federated to KEDA's
    operator) and the TriggerAuthentication naming it; resources named `<name>-*` under `parent`."""
    child = pulumi.ResourceOptions(parent=parent)
    identity, credential = federated_identity(
        f"{name}-identity",
        f"{name}-keda-operator",
        handle=args["cluster"],
        namespace=KEDA_NAMESPACE,
        service_account=KEDA_SERVICE_ACCOUNT,
        opts=child,
        azure_name=identity_name,
    )
    reader = roles.assign_role(
        f"{name}-monitoring-data-reader",
        role_guid=roles.MONITORING_DATA_READER,
        principal_id=identity.principal_id,
        scope=args["monitor_workspace_id"],
        opts=child,
    )
    auth = k8s.apiextensions.CustomResource(
        f"{name}-trigger-auth",
        api_version=KEDA_API_VERSION,
        kind="TriggerAuthentication",
        metadata=keda_metadata(object_name, namespace),
        spec={"podIdentity": {"provider": "azure-workload", "identityId": identity.client_id}},
        # KEDA may only try the identity once the token exchange and the read grant are in place.
        opts=pulumi.ResourceOptions.merge(
            keda_object_options(parent, args["cluster"]), pulumi.ResourceOptions(depends_on=[credential, reader])
        ),
    )
    return auth, identity


class GpuAutoscalingArgs(KedaWiringArgs):
    settings: ScalingTargetConfig
    """One scaling target (namespace, deployment, replicas, thresholds) of `autoscaling.targets`."""
    identity_name: NotRequired[str]
    """Azure name of the identity KEDA queries as (default `id-<component name>-keda`)."""


class GpuAutoscaling(pulumi.ComponentResource):
    """Scales one Deployment on its pods' average GPU utilisation; instantiate once per workload."""

    identity_client_id: pulumi.Output[str]
    """Client ID of the identity KEDA queries Prometheus as."""
    identity_principal_id: pulumi.Output[str]
    """Principal ID of that identity (holder of Monitoring Data Reader on the workspace)."""
    scaled_object_name: str
    """Name of the ScaledObject (same namespace as the Deployment)."""
    query: str
    """The PromQL query KEDA evaluates."""

    def __init__(self, name: str, args: GpuAutoscalingArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:GpuAutoscaling", name, None, opts)
        target, handle = args["settings"], args["cluster"]
        object_name = f"{target.deployment}-gpu-utilization"
        auth, identity = keda_trigger_authentication(
            self, name, args, args.get("identity_name", f"id-{name}-keda"), object_name, target.namespace
        )
        in_cluster = keda_object_options(self, handle)
        self.query = gpu_utilization_query(target.namespace, target.deployment)
        k8s.apiextensions.CustomResource(
            f"{name}-scaled-object",
            api_version=KEDA_API_VERSION,
            kind="ScaledObject",
            metadata=keda_metadata(object_name, target.namespace),
            spec={
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target.deployment},
                "minReplicaCount": target.min_replicas,
                "maxReplicaCount": target.max_replicas,
                "pollingInterval": target.polling_interval_seconds,
                "cooldownPeriod": target.cooldown_period_seconds,
                "triggers": [
                    {
                        "type": "prometheus",
                        # The query returns a per-pod average, so the HPA compares it as a Value, not divided by pods.
                        "metricType": "Value",
                        "metadata": {
                            "serverAddress": args["prometheus_query_endpoint"],
                            "query": self.query,
                            "threshold": str(target.target_utilization_percent),
                            "activationThreshold": str(target.activation_utilization_percent),
                        },
                        "authenticationRef": {"name": object_name, "kind": "TriggerAuthentication"},
                    }
                ],
            },
            opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[auth])),
        )

        self.identity_client_id = identity.client_id
        self.identity_principal_id = identity.principal_id
        self.scaled_object_name = object_name
        self.register_outputs(
            {
                "identity_client_id": self.identity_client_id,
                "identity_principal_id": self.identity_principal_id,
                "scaled_object_name": self.scaled_object_name,
                "query": self.query,
            }
        )
