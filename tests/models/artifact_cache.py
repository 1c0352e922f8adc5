"""Azure Container Registry's artifact cache: which upstream image a pull from the registry fetches.

Source: learn.microsoft.com/azure/container-registry/artifact-cache-overview and wildcards-artifact-cache (read
2026-12). A cache rule maps a target repository in the registry to a source repository upstream. A static rule maps
one repository (`target` -> `source`); a wildcard rule `<target prefix>/*` -> `<source prefix>/*` maps every
repository under the prefix, keeping the rest of the path. The tag or digest of the pull is passed upstream as
given. A pull of `<login server>/<repository>` that no rule serves finds nothing upstream.
"""

from __future__ import annotations

import re

from aks_gpu_platform.testing import Recording

REGISTRY = "azure-native:containerregistry:Registry"
CACHE_RULE = "azure-native:containerregistry:CacheRule"


def cached_upstream(image: str, recording: Recording) -> str | None:
    """The upstream reference the recorded registries' cache rules fetch for `image`
    (`<login server>/<repository>[:tag][@digest]`), or None when no registry of the recording serves it."""
    for registry in recording.of_type(REGISTRY):
        server = f"{str(registry.inputs['registryName']).lower()}.azurecr.io"
        if not image.startswith(f"{server}/"):
            continue
        path = image.removeprefix(f"{server}/")
        repository = re.split(r"[:@]", path, maxsplit=1)[0]
        tail = path.removeprefix(repository)  # `:tag`, `@digest` or both: passed upstream as given
        rule_registry = registry.outputs.get("name", registry.inputs["registryName"])
        for rule in recording.of_type(CACHE_RULE):
            if rule.inputs.get("registryName") not in (rule_registry, registry.inputs["registryName"]):
                continue
            target, source = str(rule.inputs["targetRepository"]), str(rule.inputs["sourceRepository"])
            if target.endswith("/*") and repository.startswith(target[:-1]):
                return source[:-1] + repository.removeprefix(target[:-1]) + tail
            if repository == target:
                return source + tail
    return None
