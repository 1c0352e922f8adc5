"""Module paths of the 0.2 layout, still importable: each resolves to the module that now holds it.

0.3 grouped `components/` and `config/` by concern (cluster, network, gpu, monitoring, storage, training,
fleet, upgrade, inference; `config/catalog` for the dated facts). A consumer's
`from aks_gpu_platform.components.gpu_autoscaling import GpuAutoscaling` keeps working: the old name is the
same module object as `aks_gpu_platform.components.inference.autoscaling` (so patches and `isinstance` agree),
with an OldLayoutWarning (a DeprecationWarning) naming the new path; so does a name a concern package reads on
from its section module (`aks_gpu_platform.config.gpu.GpuPoolConfig`). Type checkers follow the new paths only.
Both go in REMOVED_IN, released no earlier than NOT_BEFORE (docs/versioning.md, CHANGELOG.md).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import pkgutil
import sys
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

REMOVED_IN = "0.4.0"
"""The release without the 0.2 module paths and the concern packages' section names."""
NOT_BEFORE = "2027-06-30"
"""The earliest day REMOVED_IN comes out: the time a consumer has to move their imports."""
WHEN = f"removed in {REMOVED_IN} (not before {NOT_BEFORE})"


class OldLayoutWarning(DeprecationWarning):
    """An import through the 0.2 layout: a moved module path or a name a concern package reads on from a module."""


# old module (relative to this package) -> its home since 0.3. An old module whose path is now a concern package
# (`config.gpu`, `components.fleet`, ...) is that package: it reads its names on from the section module.
MOVED = {
    "components.context": "components.shared.context",
    "components.roles": "components.shared.roles",
    "components.workload_identity": "components.shared.workload_identity",
    "components.workloads": "components.shared.workloads",
    "components.scan_exceptions": "components.shared.scan_exceptions",
    "components.aks_cluster": "components.cluster.aks_cluster",
    "components.kubeconfig": "components.cluster.kubeconfig",
    "components.resource_group": "components.cluster.resource_group",
    "components.agent_pools": "components.cluster.agent_pools",
    "components.cpu_node_pool": "components.cluster.cpu_node_pool",
    "components.registry": "components.monitoring.registry",
    "components.azure_policy": "components.cluster.azure_policy",
    "components.private_endpoint": "components.network.private_endpoint",
    "components.network_boundaries": "components.network.policies",
    "components.gpu_node_pool": "components.gpu.node_pool",
    "components.gpu_node_images": "components.gpu.node_images",
    "components.image_prepull": "components.gpu.image_prepull",
    "components.gpu_stack": "components.gpu.nvidia_stack",
    "components.aks_managed_gpu": "components.gpu.aks_managed",
    "components.amd_gpu": "components.gpu.amd_stack",
    "components.amd_registry_secret_job": "components.gpu.amd_registry_secret_job",
    "components.dra_driver": "components.gpu.dra_driver",
    "components.gpu_smoke_test": "components.gpu.smoke_test",
    "components.gpu_validation": "components.gpu.validation",
    "components.nccl_probe": "components.gpu.nccl_probe",
    "components.gpu_health": "components.gpu.health",
    "components.gpu_monitoring": "components.monitoring.gpu_monitoring",
    "components.dcgm_exporter": "components.monitoring.dcgm_exporter",
    "components.gpu_alerts": "components.monitoring.alerts",
    "components.recording_rules": "components.monitoring.recording_rules",
    "components.metrics_labels": "components.monitoring.metrics_labels",
    "components.kueue_metrics": "components.training.kueue_metrics",
    "components.grafana_dashboards": "components.monitoring.grafana",
    "components.log_workspace": "components.monitoring.log_workspace",
    "components.storage_classes": "components.storage.disk_classes",
    "components.blob_storage_classes": "components.storage.blob_classes",
    "components.lustre_storage": "components.storage.lustre",
    "components.lustre_tiering": "components.storage.lustre_tiering",
    "components.netapp_files": "components.storage.netapp",
    "components.training_queues": "components.training.queues",
    "components.team_tenancy": "components.training.team_tenancy",
    "components.team_admission": "components.training.team_admission",
    "components.team_storage": "components.training.team_storage",
    "components.fleet_admission": "components.fleet.admission",
    "components.fleet_multikueue": "components.fleet.multikueue",
    "components.multikueue_token_rotator": "components.fleet.token_rotator",
    "components.upgrade_policy": "components.upgrade.policy",
    "components.disruption_budget": "components.upgrade.disruption_budget",
    "components.gpu_autoscaling": "components.inference.autoscaling",
    "components.gpu_inference_sample": "components.inference.triton_sample",
    "config.aks_versions": "config.catalog.aks_versions",
    "config.cold_start_catalog": "config.catalog.cold_start",
    "config.gpu_catalog": "config.catalog.gpu_sizes",
    "config.vm_catalog": "config.catalog.vm_sizes",
    "config.lustre_catalog": "config.catalog.lustre_skus",
    "config.prices": "config.catalog.prices",
    "config.regions": "config.catalog.regions",
    "config.images": "config.catalog.images",
    "config.image_platforms": "config.catalog.image_platforms",
    "config.node_pools": "config.cluster.node_pools",
    "config.security": "config.cluster.security",
    "config.node_image": "config.gpu.node_image",
    "config.gpu_validation": "config.gpu.validation",
    "config.gpu_health": "config.gpu.health",
    "config.scheduling": "config.gpu.scheduling",
    "config.lustre_tiering": "config.storage.lustre_tiering",
    "config.netapp": "config.storage.netapp",
    "config.fleet_rules": "config.rules",
    "config.autoscaling": "config.inference.section",
}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, new_name: str) -> None:
        self.new_name = new_name
        self.original_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {self.new_name}; the old path is {WHEN}", OldLayoutWarning, stacklevel=2)
        module = importlib.import_module(self.new_name)
        self.original_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamped the old name's spec on the shared module: give it back its own.
        module.__spec__ = self.original_spec


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    def __init__(self, package: str) -> None:
        self.package = package

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        prefix = self.package + "."
        if not fullname.startswith(prefix) or fullname[len(prefix) :] not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(prefix + MOVED[fullname[len(prefix) :]]))


def install(package: str) -> None:
    """Resolve the old module paths under `package` (the installed name, `aks_gpu_platform`)."""
    if not any(isinstance(finder, _MovedModuleFinder) and finder.package == package for finder in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder(package))


def section_names(package: str, home: str) -> Callable[[str], Any]:
    """A concern package's `__getattr__`: the names of its section module, so that `config.gpu.GpuPoolConfig`
    (the 0.2 module `config/gpu.py`) reads on from `config/gpu/section.py`, with an OldLayoutWarning. Loaded on
    first use: importing the package alone imports none of its modules."""

    def __getattr__(name: str) -> Any:
        # A submodule (`from . import token_rotator`) is the import system's to load: reading the section
        # module for it would import that module in the middle of its own imports.
        if name.startswith("__") or name in {m.name for m in pkgutil.iter_modules(sys.modules[package].__path__)}:
            raise AttributeError(name)
        module = importlib.import_module(f"{package}.{home}")
        try:
            found = getattr(module, name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        warnings.warn(f"{package}.{name}: import it from {module.__name__}; this name is {WHEN}", OldLayoutWarning, 2)
        return found

    return __getattr__
