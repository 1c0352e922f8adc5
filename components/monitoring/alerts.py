"""The GPU alert rules: PromQL over the series the DCGM scrape stores, with the labels of the label contract."""

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_azure_native.alertsmanagement as alertsmanagement

from aks_gpu_platform.config.gpu.scheduling import GPU_POOL_LABEL_KEY, GPU_POOL_LABEL_VALUE
from aks_gpu_platform.config.monitoring.section import AlertThresholdsConfig

from . import metrics_labels as labels
from .recording_rules import held_utilization_percent, mig_utilization_missing

AlertSpec = tuple[str, str, str, int, str]
"""(alert name, PromQL expression, ISO 8601 `for` duration, severity 0-4, description)."""


def alert_rules(
    specs: Sequence[AlertSpec], action_group_id: pulumi.Input[str], enabled: bool, rule_labels: Mapping[str, str]
) -> list[alertsmanagement.PrometheusRuleArgsDict]:
    """Prometheus alert rules notifying the action group, resolved automatically once the condition clears."""
    return [
        {
            "alert": alert,
            "expression": expression,
            "for_": for_,
            "severity": severity,
            "enabled": enabled,
            "labels": dict(rule_labels),
            "annotations": {"description": description},
            "actions": [{"action_group_id": action_group_id}],
            "resolve_configuration": {"auto_resolved": True, "time_to_resolve": "PT10M"},
        }
        for alert, expression, for_, severity, description in specs
    ]


# The alerted GPU, in a description: its index and node, as the scrape labels them.
_GPU = f"GPU {{{{ $labels.{labels.GPU} }}}} on {{{{ $labels.{labels.NODE} }}}}"


def _hardware_faults() -> list[AlertSpec]:
    """Severity 1: the GPU is failing."""
    return [
        (
            "GpuXidError",
            "DCGM_FI_DEV_XID_ERRORS > 0",
            "PT1M",
            1,
            f"{_GPU} reported XID {{{{ $value }}}}; check the driver log, the node may need a reboot or repair",
        ),
        (
            "GpuDoubleBitEccErrors",
            "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m]) > 0",
            "PT1M",
            1,
            f"{_GPU} has uncorrectable (double-bit) ECC errors; drain the node",
        ),
    ]


def _heat_and_memory(t: AlertThresholdsConfig) -> list[AlertSpec]:
    """The GPU will throttle, or the next allocation on it may fail."""
    memory_percent = "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) * 100"
    return [
        (
            "GpuTemperatureHigh",
            f"DCGM_FI_DEV_GPU_TEMP > {t.gpu_temperature_celsius}",
            f"PT{t.temperature_minutes}M",
            2,
            f"{_GPU} is above {t.gpu_temperature_celsius} C and will throttle",
        ),
        (
            "GpuMemoryNearlyFull",
            f"{memory_percent} > {t.memory_used_percent}",
            f"PT{t.memory_minutes}M",
            3,
            f"{_GPU} uses more than {t.memory_used_percent}% of its memory; the next allocation may fail "
            "with out-of-memory",
        ),
    ]


def _waste(t: AlertThresholdsConfig) -> AlertSpec:
    """A pod holds a GPU it hardly uses."""
    holder = f"{{{{ $labels.{labels.WORKLOAD_NAMESPACE} }}}}/{{{{ $labels.{labels.WORKLOAD_POD} }}}}"
    return (
        "GpuAllocatedButIdle",
        f"({held_utilization_percent(f'{t.idle_minutes}m')}) < {t.idle_utilization_percent}",
        "PT5M",
        3,
        f"Pod {holder} holds a GPU or MIG slice below {t.idle_utilization_percent}% utilisation for "
        f"{t.idle_minutes} min: paid for, unused",
    )


def _unobserved(t: AlertThresholdsConfig) -> list[AlertSpec]:
    """GPUs whose metrics do not arrive: a node, its MIG instances, or the exporter itself."""
    by_node = f"{labels.CLUSTER}, node"
    gpu_nodes = f'max by ({by_node}) (kube_node_labels{{label_{GPU_POOL_LABEL_KEY}="{GPU_POOL_LABEL_VALUE}"}})'
    reporting = f'max by ({by_node}) (label_replace(DCGM_FI_DEV_GPU_TEMP, "node", "$1", "{labels.NODE}", "(.*)"))'
    return [
        (
            "GpuNodeNotReportingMetrics",
            f"{gpu_nodes} unless on ({by_node}) {reporting}",
            f"PT{t.not_reporting_minutes}M",
            2,
            "GPU node {{ $labels.node }} sends no DCGM metrics: its GPUs are unobserved (exporter down or GPU lost)",
        ),
        (
            "GpuMigUtilizationNotReported",
            mig_utilization_missing(),
            f"PT{t.not_reporting_minutes}M",
            2,
            f"GPU node {{{{ $labels.{labels.NODE} }}}} reports MIG instances but no per-instance "
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE: idle MIG slices go unseen (DCGM's profiling module not loaded, or the "
            "field left out of the exporter's counters)",
        ),
        (
            "DcgmExporterDown",
            f'up{{job="{labels.SCRAPE_JOB}"}} == 0',
            f"PT{t.not_reporting_minutes}M",
            2,
            f"The DCGM exporter at {{{{ $labels.{labels.TARGET_ADDRESS} }}}} cannot be scraped",
        ),
    ]


def gpu_alert_rules(
    t: AlertThresholdsConfig, action_group_id: pulumi.Input[str], enabled: bool
) -> list[alertsmanagement.PrometheusRuleArgsDict]:
    """The GPU alerts: hardware faults first (severity 1), then heat, memory pressure and waste.

    Every label they read comes from the label contract (`metrics_labels`), the names the scrape really stores.
    """
    specs = [*_hardware_faults(), *_heat_and_memory(t), _waste(t), *_unobserved(t)]
    return alert_rules(specs, action_group_id, enabled, {"team": "gpu-platform"})
