"""The storage concern's add-on (components/shared/addon.py): the Azure Managed Lustre CSI driver."""

from ..shared.addon import AddOn, Chart, Readiness
from .lustre import CSI_DRIVER_CHART, CSI_DRIVER_NAMESPACE, CSI_DRIVER_TIMEOUT_SECONDS, CSI_DRIVER_VERSION

LUSTRE_CSI = AddOn(
    name="azurelustre-csi-driver",
    summary="mounts Azure Managed Lustre (`storage.lustre`)",
    namespace=CSI_DRIVER_NAMESPACE,
    pod_security=None,
    undrained=True,
    charts=(
        Chart(
            CSI_DRIVER_CHART,
            CSI_DRIVER_VERSION,
            source="`charts/README.md` of kubernetes-sigs/azurelustre-csi-driver lists 0.6.0 as the only released "
            "chart "
            "version",
            templates_read="`charts/latest/azurelustre-csi-driver/{templates/node-daemonset-noble.yaml, values}` and "
            "`charts/README.md` (the repository has no `v0.6.0` tag; the chart is packaged from `charts/latest`)",
            readiness=Readiness(
                "680 s: the node plugin's lustre-loader may take 10 + 120 x 5 s installing the Lustre client "
                "(`node-daemonset-*.yaml` startupProbe)",
                "mcr.microsoft.com",
                timeout_seconds=CSI_DRIVER_TIMEOUT_SECONDS,
                timeout_basis="`CSI_DRIVER_TIMEOUT_SECONDS`",
            ),
        ),
    ),
)
