"""The training concern's add-ons (components/shared/addon.py): Kueue, with the teams' dashboard, and JobSet."""

from aks_gpu_platform.config.platform import PlatformConfig

from ..monitoring.addons import shipped_dashboard
from ..monitoring.grafana import TEAM_TEMPLATE
from ..shared.addon import AddOn, Chart, Readiness
from .queues import JOBSET_CHART, JOBSET_NAMESPACE, JOBSET_VERSION, KUEUE_CHART, KUEUE_NAMESPACE, KUEUE_VERSION


def _has_teams(cfg: PlatformConfig) -> bool:
    return cfg.training.enabled and bool(cfg.training.teams)


KUEUE = AddOn(
    name="kueue",
    summary="team queues, quotas and admission of training jobs (`training`)",
    namespace=KUEUE_NAMESPACE,
    pod_security="baseline",
    undrained=True,
    charts=(
        Chart(
            KUEUE_CHART,
            KUEUE_VERSION,
            source="kubernetes-sigs/kueue tag `v0.19.2` (2026-08-20), `charts/kueue`",
            templates_read="`charts/kueue/{values.yaml, templates/manager/manager.yaml, "
            "templates/manager/manager-pdb.yaml, "
            "templates/manager/manager-config.yaml, templates/webhook/manifests.yaml, templates/crd/*}`",
            readiness=Readiness("75 s: controller-manager readiness after 5 s", "registry.k8s.io"),
        ),
    ),
    # Every team's GPU-hours and queues; each team also gets its own copy in its folder.
    dashboards=(shipped_dashboard(TEAM_TEMPLATE, _has_teams),),
)

JOBSET = AddOn(
    name="jobset",
    summary="the JobSet controller distributed training jobs run on",
    namespace=JOBSET_NAMESPACE,
    pod_security="baseline",
    undrained=True,
    charts=(
        Chart(
            JOBSET_CHART,
            JOBSET_VERSION,
            source="kubernetes-sigs/jobset tag `v0.12.0` (2026-05-08), `charts/jobset`",
            templates_read="`charts/jobset/{values.yaml, templates/controller/deployment.yaml, crds/}`",
            readiness=Readiness("75 s: controller readiness after 5 s", "registry.k8s.io"),
        ),
    ),
)
