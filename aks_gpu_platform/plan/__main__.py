"""`python -m aks_gpu_platform.plan`: the console command `aks-gpu-platform` without its script."""

import sys

from .cli import main

sys.exit(main())
