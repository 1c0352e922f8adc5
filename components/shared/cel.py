"""CEL shared by the admission policies that count GPUs (the team boundary and the fleet's largest-job policy)."""

from collections.abc import Sequence


def container_gpus(resources: Sequence[str]) -> str:
    """CEL: the GPUs one container `c` asks for, over every GPU resource name."""
    terms = [
        f"(has(c.resources) && has(c.resources.limits) && '{r}' in c.resources.limits ? "
        f"int(c.resources.limits['{r}']) : (has(c.resources) && has(c.resources.requests) && "
        f"'{r}' in c.resources.requests ? int(c.resources.requests['{r}']) : 0))"
        for r in resources
    ]
    return " + ".join(terms)
