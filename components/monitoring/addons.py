"""The monitoring concern's add-on (components/shared/addon.py): the DCGM exporter and the GPU dashboard, and how an
add-on ships a dashboard file of components/monitoring/dashboards/."""

import json
from collections.abc import Callable

from aks_gpu_platform.config.monitoring.section import DcgmExporterConfig
from aks_gpu_platform.config.platform import PlatformConfig

from ..shared.addon import AddOn, Board, Chart, Dashboard, Readiness
from .dcgm_exporter import DCGM_CHART_REPO, EXPORTER_NAMESPACE
from .grafana import dashboard_files

# GpuMonitoring (`<platform>-monitoring`) created the shipped dashboards under its Grafana dashboards component
# (`<platform>-monitoring-dashboards`) as `<that name>-<file stem>`: the names they keep.
SHIPPED_DASHBOARD_ROLE = "monitoring-dashboards-{stem}"


def shipped_dashboard(stem: str, shown: Callable[[PlatformConfig], bool] | None = None) -> Dashboard:
    """The dashboard file `components/monitoring/dashboards/<stem>.json`, in every stack or where `shown`."""

    def boards(cfg: PlatformConfig) -> list[Board]:
        if shown is not None and not shown(cfg):
            return []
        (path,) = dashboard_files([stem])
        return [Board(SHIPPED_DASHBOARD_ROLE.format(stem=stem), json.loads(path.read_text()))]

    return Dashboard(f"`{stem}.json`", boards)


DCGM_EXPORTER = AddOn(
    name="dcgm-exporter",
    summary="GPU metrics for managed Prometheus (unless the GPU Operator's or AKS's exporter is scraped instead)",
    namespace=EXPORTER_NAMESPACE,
    pod_security="privileged",
    undrained=True,
    charts=(
        Chart(
            "dcgm-exporter",
            DcgmExporterConfig.model_fields["chart_version"].default,
            repository=DCGM_CHART_REPO,
            source="NVIDIA/dcgm-exporter tag `4.5.3-4.8.2` (2026-05-06): chart `4.8.2`, image `4.5.3-4.8.2-distroless` "
            "(the defaults of stack config `monitoring.dcgmExporter`)",
            templates_read="`deployment/{values.yaml, Chart.yaml, templates/daemonset.yaml, templates/_helpers.tpl, "
            "templates/service-monitor.yaml, templates/metrics-configmap.yaml}`",
            readiness=Readiness(
                "115 s: readiness delay 45 s",
                "the platform registry",
                runtime_class='none (`""`); **`nvidia`** under the GPU Operator, installed after it (its CDI setup '
                "leaves runc containerd's default, so only that class reaches the operator's driver)",
            ),
        ),
    ),
    dashboards=(shipped_dashboard("gpu-overview"),),
)
