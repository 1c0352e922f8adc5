"""Fleet: AksGpuFleet, member platforms per region, the MultiKueue manager and its admission.

`aks_gpu_platform.components.fleet.<name>` reads on from `aks_gpu_fleet.py`, where the 0.2 module of the same path
lived; with a DeprecationWarning, until 0.4.0 (aks_gpu_platform/moved_modules.py).
"""

from typing import TYPE_CHECKING

from aks_gpu_platform.moved_modules import section_names

if TYPE_CHECKING:
    from .aks_gpu_fleet import *  # noqa: F403

__getattr__ = section_names(__name__, "aks_gpu_fleet")
