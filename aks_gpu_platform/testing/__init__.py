"""Evaluate a Pulumi program offline and check what it would create: no cloud, no CLI, no credentials.

    from aks_gpu_platform.testing import evaluate_stack_file, policy_verdicts, schema_verdicts

    recording = evaluate_stack_file("Pulumi.dev.yaml")  # the project's __main__.py with this stack
    pool = recording.one("azure-native:containerservice:AgentPool", "gput4")
    assert pool.inputs["nodeTaints"] == ["sku=gpu:NoSchedule"]
    assert all(v.status != "invalid" for v in schema_verdicts(recording, "1.33"))
    assert not [p.name for p, found in policy_verdicts(recording, "dev") if p.mandatory and found]

The program runs under Pulumi mocks that answer as Azure would (resource IDs, identities, the
cluster's OIDC issuer, endpoints), so outputs wired into other resources can be checked by value.
The `Recording` holds every registration with its inputs, outputs and options (protect,
ignoreChanges, dependencies, aliases), the stack outputs, and every value only the mocks made up.
`schema_verdicts` needs the `testing` extra (`pip install 'aks-gpu-platform[testing]'`). docs/testing.md
describes it all.
"""

from .checks import SchemaVerdict, kubernetes_object, policy_verdicts, schema_verdicts
from .recording import RecordedResource, Recording
from .runtime import evaluate, evaluate_stack_file, program_from_file
from .stack_files import read_stack_yaml

__all__ = [
    "RecordedResource",
    "Recording",
    "SchemaVerdict",
    "evaluate",
    "evaluate_stack_file",
    "kubernetes_object",
    "policy_verdicts",
    "program_from_file",
    "read_stack_yaml",
    "schema_verdicts",
]
