"""Network: the VNet and subnets, private endpoints, and the network policies at the team and platform
boundaries.

`aks_gpu_platform.components.network.<name>` reads on from `vnet.py`, where the 0.2 module of the same path lived;
with a DeprecationWarning, until 0.4.0 (aks_gpu_platform/moved_modules.py).
"""

from typing import TYPE_CHECKING

from aks_gpu_platform.moved_modules import section_names

if TYPE_CHECKING:
    from .vnet import *  # noqa: F403

__getattr__ = section_names(__name__, "vnet")
