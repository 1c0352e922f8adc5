"""Which GPUs of a node a container sees: the device plugin's allocation, the kubelet's and containerd's env merge,
and the NVIDIA container toolkit's decision, each written from its source at the version the platform runs.

- The device plugin (NVIDIA/k8s-device-plugin v0.20.0 internal/plugin/server.go getAllocateResponse) answers only for
  a container that asks for `nvidia.com/gpu`. `envvar` (cmd/nvidia-device-plugin/main.go default, the chart's
  `deviceListStrategy: null`) sets NVIDIA_VISIBLE_DEVICES to the allocated IDs; `volume-mounts` sets it to
  /var/run/nvidia-container-devices and mounts one path per ID under it; `cdi-annotations` and `cdi-cri` set no env
  when every strategy is a CDI one (the GPU Operator v26.7.0 controllers/object_controls.go
  transformDevicePluginCtrForCDI: `cdi-annotations,cdi-cri`) and name the devices in annotations or CDI devices.
- The kubelet (kubernetes v1.36 pkg/kubelet/kubelet_pods.go GenerateRunContainerOptions) lists the plugin's env
  first, then the container's envFrom, then its env; containerd (internal/cri opts WithEnv) lays that list over the
  image's env, each later value replacing an earlier one of the same name. envFrom (makeEnvironmentVariables)
  reads each ConfigMap's or Secret's keys in order of the list, naming each `prefix + key`, a later source winning.
  Ephemeral containers get no device from the plugin (they have no resources) and the same env merge.
- The toolkit (NVIDIA/nvidia-container-toolkit v1.20.0 internal/config/image/cuda_image.go VisibleDevices and
  devicesFromEnvvars, devices.go NewVisibleDevices, api/config/v1/config.go GetDefault) runs only where the NVIDIA
  runtime runs the container: first CDI annotations with an accepted prefix (`cdi.k8s.io/`), then, with
  `accept-nvidia-visible-devices-as-volume-mounts` (default false), the mounts under the device root, then the env
  variable, honoured in an unprivileged container only with `accept-nvidia-visible-devices-envvar-when-unprivileged`
  (default true). An unset, empty or `void` value is no device; `none` is no device but the driver; `all` is every
  GPU. `swarm-resource` is unset by default, so NVIDIA_VISIBLE_DEVICES alone is read.
- Where the runtime is runc (the GPU Operator's CDI mode keeps containerd's default; `nvidia` only through the
  RuntimeClass), containerd injects the CDI devices the plugin named and reads no env at all.

Pod annotations do not reach a container's OCI annotations (the toolkit's installer passes `cdi.k8s.io/*` container
annotations, which only the kubelet writes from the plugin's answer), so a pod cannot request CDI devices itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

VISIBLE = "NVIDIA_VISIBLE_DEVICES"
VOLUME_MOUNT_ROOT = "/var/run/nvidia-container-devices"
CDI_ANNOTATION_PREFIX = "cdi.k8s.io/"
GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class Node:
    """A GPU node as one GPU mode sets it up."""

    gpus: tuple[str, ...]
    strategy: tuple[str, ...] = ("envvar",)
    """The device plugin's device list strategies."""
    nvidia_runtime_default: bool = True
    """AKS's GPU nodes run containers through the NVIDIA runtime; the GPU Operator's CDI mode keeps runc."""
    accept_envvar_unprivileged: bool = True
    accept_volume_mounts: bool = False


def node(mode: str, gpus: int = 8) -> Node:
    """The node of a GPU mode: devicePlugin (the chart at its default strategy), aksManaged (AKS's own plugin and
    toolkit, at their defaults as far as anything says), gpuOperator (v26.7.0: CDI, runc as the default)."""
    ids = tuple(f"GPU-{i}" for i in range(gpus))
    if mode == "gpuOperator":
        return Node(ids, ("cdi-annotations", "cdi-cri"), nvidia_runtime_default=False)
    return Node(ids)


def _quantity(container: Mapping[str, Any]) -> int:
    resources = container.get("resources") or {}
    for key in ("limits", "requests"):
        if GPU in (resources.get(key) or {}):
            return int(resources[key][GPU])
    return 0


@dataclass
class Allocation:
    env: dict[str, str]
    annotations: dict[str, str]
    cdi_devices: list[str]
    mounts: list[str]


def allocate(n: Node, ids: Sequence[str]) -> Allocation:
    """The plugin's answer for one container given `ids` (none: the plugin is not asked)."""
    found = Allocation({}, {}, [], [])
    if not ids:
        return found
    cdi = [s for s in n.strategy if s.startswith("cdi-")]
    names = [f"nvidia.com/gpu={i}" for i in ids]
    if "cdi-annotations" in cdi:
        found.annotations[f"{CDI_ANNOTATION_PREFIX}nvidia-device-plugin_0"] = ",".join(names)
    if "cdi-cri" in cdi:
        found.cdi_devices = names
    if len(cdi) == len(n.strategy):
        return found
    if "envvar" in n.strategy:
        found.env[VISIBLE] = ",".join(ids)
    if "volume-mounts" in n.strategy:
        found.env[VISIBLE] = VOLUME_MOUNT_ROOT
        found.mounts = [f"{VOLUME_MOUNT_ROOT}/{i}" for i in ids]
    return found


def env_from(container: Mapping[str, Any], sources: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The variables a container's envFrom yields. `sources`: `configMap/<name>` or `secret/<name>` -> its data
    (a missing optional source yields nothing)."""
    found: dict[str, str] = {}
    for entry in container.get("envFrom") or []:
        kind = "configMap" if "configMapRef" in entry else "secret"
        ref = entry[f"{kind}Ref"]
        data = sources.get(f"{kind}/{ref['name']}")
        if data is None:
            assert ref.get("optional"), f"{kind} {ref['name']}: the kubelet does not start the container without it"
            continue
        found |= {entry.get("prefix", "") + k: v for k, v in data.items()}
    return found


def container_env(
    image_env: Sequence[str],
    plugin_env: Mapping[str, str],
    container: Mapping[str, Any],
    sources: Mapping[str, Mapping[str, str]],
) -> dict[str, str]:
    """The env the runtime sees: the image's, then the kubelet's list (plugin, envFrom, env), later names winning.
    A `valueFrom` entry is resolved by the kubelet to whatever it names: here an unknown string."""
    merged = dict(e.split("=", 1) for e in image_env)
    merged |= dict(plugin_env)
    merged |= env_from(container, sources)
    for e in container.get("env") or []:
        merged[e["name"]] = e.get("value", "<valueFrom>")
    return merged


def toolkit_devices(
    n: Node, env: Mapping[str, str], annotations: Mapping[str, str], mounts: Sequence[str], privileged: bool
) -> list[str]:
    """The toolkit's VisibleDevices: device names, `all`, or [] (void and none both reach no GPU)."""
    requested = [d for k, v in sorted(annotations.items()) if k.startswith(CDI_ANNOTATION_PREFIX) for d in v.split(",")]
    if requested:
        return requested
    if n.accept_volume_mounts:
        from_mounts = [m[len(VOLUME_MOUNT_ROOT) + 1 :] for m in mounts if m.startswith(VOLUME_MOUNT_ROOT + "/")]
        if from_mounts:
            return from_mounts
    if not (privileged or n.accept_envvar_unprivileged):
        return []
    values = [v.strip() for v in env.get(VISIBLE, "").split(",") if v.strip()]
    if not values or "void" in values:
        return []
    if "all" in values:
        return ["all"]
    if "none" in values:
        return []
    return values


def gpus_seen(
    n: Node,
    pod: Mapping[str, Any],
    image_env: Mapping[str, Sequence[str]],
    sources: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, set[str]]:
    """Container name -> the node's GPUs it sees, for a pod placed on `n`. The plugin hands out GPUs in order.
    `sources`: the ConfigMaps and Secrets envFrom reads (see `env_from`)."""
    free = list(n.gpus)
    seen: dict[str, set[str]] = {}
    spec = pod.get("spec", pod)
    nvidia_runtime = n.nvidia_runtime_default or spec.get("runtimeClassName") == "nvidia"
    for c in [*(spec.get("initContainers") or []), *spec["containers"], *(spec.get("ephemeralContainers") or [])]:
        wanted = _quantity(c)
        ids, free = free[:wanted], free[wanted:]
        answer = allocate(n, ids)
        got = {d.split("=", 1)[1] for d in answer.cdi_devices}
        if nvidia_runtime:
            env = container_env(image_env.get(c["image"], ()), answer.env, c, sources or {})
            privileged = bool((c.get("securityContext") or {}).get("privileged"))
            for device in toolkit_devices(n, env, answer.annotations, answer.mounts, privileged):
                name = device.split("=", 1)[-1]
                got |= set(n.gpus) if name == "all" else {name}
        else:
            # containerd injects the CDI devices named in annotations too (WithCDI).
            got |= {d.split("=", 1)[1] for v in answer.annotations.values() for d in v.split(",")}
        seen[c["name"]] = got & set(n.gpus)
    return seen
