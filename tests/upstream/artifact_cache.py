"""Azure Container Registry's artifact cache: which upstream image a pull from the registry fetches.

Source: learn.microsoft.com/azure/container-registry/artifact-cache-overview and wildcards-artifact-cache (read
2026-12). A cache rule maps a target repository in the registry to a source repository upstream. A static rule maps
one repository (`target` -> `source`); a wildcard rule `<target prefix>/*` -> `<source prefix>/*` maps every
repository under the prefix, keeping the rest of the path. The tag or digest of the pull is passed upstream as
given. A pull of `<login server>/<repository>` that no rule serves finds nothing upstream.
"""

from __future__ import annotations

import re

from aks_gpu_platform.testing import RecordedResource, Recording

REGISTRY = "azure-native:containerregistry:Registry"
CACHE_RULE = "azure-native:containerregistry:CacheRule"


def serving_rule(image: str, recording: Recording) -> tuple[RecordedResource, str] | None:
    """The cache rule of a recorded registry that serves `image` (`<login server>/<repository>[:tag][@digest]`),
    and the upstream reference it fetches; None when no rule does."""
    for registry in recording.of_type(REGISTRY):
        name = str(registry.inputs["registryName"])
        server = f"{name.lower()}.azurecr.io"
        if not image.startswith(f"{server}/"):
            continue
        path = image.removeprefix(f"{server}/")
        repository = re.split(r"[:@]", path, maxsplit=1)[0]
        tail = path.removeprefix(repository)  # `:tag`, `@digest` or both: passed upstream as given
        for rule in recording.of_type(CACHE_RULE):
            if rule.inputs.get("registryName") not in (name, registry.outputs.get("name")):
                continue
            target, source = str(rule.inputs["targetRepository"]), str(rule.inputs["sourceRepository"])
            if target.endswith("/*") and repository.startswith(target[:-1]):
                return rule, source[:-1] + repository.removeprefix(target[:-1]) + tail
            if repository == target:
                return rule, source + tail
    return None


def cached_upstream(image: str, recording: Recording) -> str | None:
    """The upstream reference the recorded registries' cache rules fetch for `image`, or None when none serves it."""
    served = serving_rule(image, recording)
    return served[1] if served else None
