"""What a platform team runs on its own stack, offline: the plan, the plan diff, cost and cold start.

    aks-gpu-platform plan --stack dev                 # in the folder of your Pulumi.yaml
    aks-gpu-platform plan-diff --stack dev --base main

The same from Python: `run_stack` evaluates the project's program under mocks, `estimate_cost` prices
what it would create, `cold_start_budgets` says how long a GPU pod waits for a node, `diff_plans`
compares two `plan.json` files.
"""

from .cli import main
from .cold_start import budgets as cold_start_budgets
from .diff import PlanDiff, diff_plans
from .document import read_plan
from .estimate import estimate_cost
from .offline import find_project, run_stack

__all__ = [
    "PlanDiff",
    "cold_start_budgets",
    "diff_plans",
    "estimate_cost",
    "find_project",
    "main",
    "read_plan",
    "run_stack",
]
