"""The images the platform runs: each pinned by digest where a public upstream source records one.

A tag can be pushed again; a digest cannot. Each digest below is read from a file an upstream project publishes
with the image (an operator bundle's relatedImages, a node image's bill of materials), named next to it, and is
the digest of the multi-architecture index where the source says so. No digest is computed or guessed here: an
image whose digest no upstream source records keeps its tag and is listed in `UNPINNED` with why, and
docs/security.md lists them ("Image digests").
"""

from __future__ import annotations

import re
from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class PinnedImage:
    """An image reference (`registry/repository:tag`) and the digest an upstream source records for it."""

    reference: str
    digest: str
    source: str
    """The upstream file the digest is read from: repository, path, tag or commit."""

    @property
    def repository(self) -> str:
        return self.reference.rsplit(":", 1)[0]

    @property
    def tag(self) -> str:
        return self.reference.rsplit(":", 1)[1]

    @property
    def pinned(self) -> str:
        """`registry/repository:tag@sha256:...`: the runtime pulls the digest; the tag stays for people."""
        return f"{self.reference}@{self.digest}"

    @property
    def pinned_tag(self) -> str:
        """`tag@sha256:...`, for charts that join `repository:tag` themselves."""
        return f"{self.tag}@{self.digest}"


_GPU_OPERATOR_BUNDLE = (
    "NVIDIA/gpu-operator {tag}, bundle/manifests/gpu-operator-certified.clusterserviceversion.yaml, spec.relatedImages"
)
_AKS_NODE_IMAGE = (
    "Azure/AgentBaker 06836ee2, vhdbuilder/release-notes/AKSUbuntu/gen2/{sku}/202608.20.0-image-list.json, imageBom "
    "repoDigests (the same digest in 2204containerd and 2404arm64containerd: the multi-architecture index)"
)

PINNED: dict[str, PinnedImage] = {
    image.reference: image
    for image in (
        PinnedImage(
            "mcr.microsoft.com/oss/v2/kubernetes/pause:3.10.2",
            "sha256:b64246f245be905d38c365c02ea1c3529a19d99a555a193caf2024cf7542cf7d",
            _AKS_NODE_IMAGE.format(sku="2204containerd"),
        ),
        PinnedImage(
            "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
            "sha256:a61ba9fd8efb82f3a79f877f7580e02c1e8e7593f62473644bc9c79e315c3312",
            _GPU_OPERATOR_BUNDLE.format(tag="v26.7.0") + " (device-plugin-image, gpu-feature-discovery-image)",
        ),
        PinnedImage(
            "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0",
            "sha256:f8c647d581f7c8b178efdb7e6c94f5fb6eb12ebc05e2157fa314d327560fcb7a",
            _GPU_OPERATOR_BUNDLE.format(tag="v26.7.0") + " (container-toolkit-image)",
        ),
        PinnedImage(
            "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0",
            "sha256:cab2cf9deafc9602da69d0832a82958a7687f22f4a2f19674099dc9a5c4ea8e2",
            _GPU_OPERATOR_BUNDLE.format(tag="v26.7.0") + " (mig-manager-image)",
        ),
        PinnedImage(
            "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0",
            "sha256:7d98d08a751cc528d1c8c8bdc2f9d9fcd59714b158a3985a5a0262f1620098e4",
            _GPU_OPERATOR_BUNDLE.format(tag="v26.7.0") + " (k8s-driver-manager-image)",
        ),
        PinnedImage(
            "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless",
            "sha256:613ab03c11d442fd960ff515f547e9921537454a712d08160bc8f677f89f1c35",
            _GPU_OPERATOR_BUNDLE.format(tag="v26.7.0") + " (dcgm-exporter-image)",
        ),
        PinnedImage(
            "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless",
            "sha256:60d3b00ac80b4ae77f94dae2f943685605585ad9e92fdccda3154d009ae317cc",
            _GPU_OPERATOR_BUNDLE.format(tag="v26.3.2") + " (dcgm-exporter-image)",
        ),
    )
}

_NO_RECORD = "no upstream file publishes its digest (release notes, chart values and manifests carry the tag only)"
# Images the platform runs by tag, and why: an exact reference, or a prefix ending in `*`. Configurable images
# (the inference sample, the verification pods, pre-pulled images) are the user's to pin: write
# `image:tag@sha256:...` in the stack file.
UNPINNED: dict[str, str] = {
    "nvcr.io/nvidia/gpu-operator:v26.7.0": "the operator and its validator: the v26.7.0 bundle names "
    "ghcr.io/nvidia/gpu-operator:main-latest for both, not the release image",
    "nvcr.io/nvidia/driver:595.91.07": "the GPU Operator's driver: the v26.7.0 bundle pins driver images by digest "
    "without saying which version and OS each is",
    "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04": "the GPU Operator's DCGM: the bundle pins the ubi10 "
    "build, not the Ubuntu one the chart runs",
    "nvidia/cuda:12.4.1-base-ubuntu22.04": f"the GPU smoke test (Docker Hub): {_NO_RECORD}",
    "nvcr.io/nvidia/cloud-native/dcgm:4.5.2-1-ubuntu22.04": f"GPU validation's DCGM diagnostics: {_NO_RECORD}",
    "nvcr.io/nvidia/pytorch:26.03-py3": f"GPU validation's NCCL check: {_NO_RECORD}",
    "nvcr.io/nvidia/mellanox/*": f"the Network Operator, its RDMA plugin and NFD worker: {_NO_RECORD}",
    "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.0": f"the DRA driver: {_NO_RECORD}",
    "registry.k8s.io/nfd/node-feature-discovery:v0.19.0": "the GPU Operator's node-feature-discovery subchart "
    f"(chart default): {_NO_RECORD}",
    "registry.k8s.io/kueue/*": f"Kueue (chart defaults): {_NO_RECORD}",
    "registry.k8s.io/jobset/*": f"JobSet (chart defaults): {_NO_RECORD}",
    "quay.io/jetstack/cert-manager-*": f"cert-manager (chart defaults): {_NO_RECORD}",
    "ghcr.io/nvidia/nvsentinel/*": f"NVSentinel's agents (chart defaults): {_NO_RECORD}",
    "docker.io/bitnamilegacy/*": "NVSentinel's MongoDB, its exporter, nginx and kubectl: Bitnami froze these "
    f"repositories (no more updates, security fixes included); {_NO_RECORD}",
    "docker.io/rocm/*": f"AMD's GPU Operator, device metrics exporter and KMM images: {_NO_RECORD}",
    "gcr.io/kaniko-project/executor:v1.23.2": "KMM's driver builder for AMD pools: the kaniko project is archived "
    f"upstream; {_NO_RECORD}",
    "docker.io/ubuntu:*": f"AMD driver build base images: {_NO_RECORD}",
    "docker.io/library/busybox:*": f"the AMD GPU Operator's init container: {_NO_RECORD}",
    "nvcr.io/nvidia/cloud-native/network-operator*": f"the Network Operator and its CRD hook: {_NO_RECORD}",
    "mcr.microsoft.com/oss/v2/kubernetes-csi/azurelustre-csi*": f"the Lustre CSI driver: {_NO_RECORD}",
    "mcr.microsoft.com/azure-cli:2.74.0-azurelinux3.0": "the AMD registry-secret Job, the team directory Job and the "
    f"fleet's token rotation: {_NO_RECORD}",
    "vllm/vllm-openai:v0.34.0": f"the model servers (Docker Hub): {_NO_RECORD}",
    "gcr.io/istio-release/*": f"Istio's istiod (pilot) and gateway (proxyv2) 1.30.3: {_NO_RECORD}",
    "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0": f"the endpoint picker (chart default): {_NO_RECORD}",
    "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0": "the endpoint picker of models with precise prefix-cache "
    "routing (llm-d router): no llm-d file records its digest; the one other deployments record is in "
    "docs/charts.md, to confirm against the registry before pinning it",
    "registry.k8s.io/lws/lws:v0.10.0": f"LeaderWorkerSet's controller: {_NO_RECORD}",
}


def pinned(reference: str) -> str:
    """`reference@digest` when an upstream source records the digest, else the reference as given."""
    image = PINNED.get(reference)
    return image.pinned if image else reference


def pinned_tag(repository: str, tag: str) -> str:
    """The tag (with `@digest` when recorded) for charts that take repository and tag apart."""
    image = PINNED.get(f"{repository}:{tag}")
    return image.pinned_tag if image else tag


# The GPU Operator's operands by the values key that sets their version (deployments/gpu-operator/values.yaml at
# v26.7.0, whose repository and image defaults these references match). The operator joins `repository/image`
# and `version` with `:`, so `tag@sha256:...` pulls the digest (api/nvidia/v1/clusterpolicy_types.go ImagePath
# at v26.7.0; its own bundle script writes versions the same way, .github/scripts/update-csv-images.py).
GPU_OPERATOR_OPERANDS: dict[str, PinnedImage] = {
    "toolkit": PINNED["nvcr.io/nvidia/k8s/container-toolkit:v1.20.0"],
    "devicePlugin": PINNED["nvcr.io/nvidia/k8s-device-plugin:v0.20.0"],
    "gfd": PINNED["nvcr.io/nvidia/k8s-device-plugin:v0.20.0"],
    "migManager": PINNED["nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0"],
    "driver.manager": PINNED["nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"],
    "dcgmExporter": PINNED["nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless"],
}


# The GPU Operator's images that run by tag (UNPINNED says why), by values key: only their `repository` is set, so
# the chart's image name and version stay (values.yaml at v26.7.0; the validator and operator default to the chart's
# appVersion, the driver's version gets the node's OS appended).
GPU_OPERATOR_REPOSITORIES: dict[str, str] = {
    "operator": "nvcr.io/nvidia",
    "validator": "nvcr.io/nvidia",
    "driver": "nvcr.io/nvidia",
    "dcgm": "nvcr.io/nvidia/cloud-native",
}
# Its node-feature-discovery subchart: `image.repository`, the tag its appVersion.
GPU_OPERATOR_NFD_REPOSITORY = "registry.k8s.io/nfd/node-feature-discovery"


def gpu_operator_image_values() -> dict[str, dict[str, object]]:
    """GPU Operator values that pin each operand above (`driver.manager` nests under `driver`), each pulled
    through the platform's registry (`repository` is the part before `/image`)."""
    values: dict[str, dict[str, object]] = {
        key: {"repository": mirrored_repository(repository)} for key, repository in GPU_OPERATOR_REPOSITORIES.items()
    }
    values["node-feature-discovery"] = {"image": {"repository": mirrored_repository(GPU_OPERATOR_NFD_REPOSITORY)}}
    for key, image in GPU_OPERATOR_OPERANDS.items():
        top, _, inner = key.partition(".")
        section = values.setdefault(top, {})
        operand = {"repository": mirrored_repository(image.repository.rsplit("/", 1)[0]), "version": image.pinned_tag}
        if inner:
            section[inner] = operand
        else:
            section.update(operand)
    return values


def unpinned_reason(reference: str) -> str | None:
    """Why `reference` runs by tag (its `UNPINNED` entry), or None when no entry covers it."""
    qualified_reference = qualified(reference)
    for pattern, why in UNPINNED.items():
        if _matches(reference, pattern) or _matches(qualified_reference, qualified(pattern)):
            return why
    return None


# --- pulled through the platform's registry ---------------------------------------------------------------------
#
# Nodes pull nothing from a public registry: every image comes from the platform's ACR, whose artifact cache pulls
# it from upstream on first use (one repository-level wildcard cache rule per upstream registry,
# `<host>/* => <upstream>/*`: learn.microsoft.com/azure/container-registry/wildcards-artifact-cache). Docker Hub
# limits anonymous pulls, so its rule authenticates with a credential set when the stack holds credentials.


@dataclass(frozen=True)
class Upstream:
    """A public registry the platform's images come from, and the cache rule that mirrors it."""

    host: str
    """Registry host as it appears in an image reference (`docker.io` for Docker Hub)."""
    rule_name: str
    """Cache rule name in the ACR (letters, digits and dashes)."""
    rate_limited: bool = False
    """The registry limits anonymous pulls: its cache rule should authenticate."""

    @property
    def target(self) -> str:
        """The ACR repository prefix the upstream's repositories land under: the upstream host itself."""
        return self.host


UPSTREAMS: dict[str, Upstream] = {
    u.host: u
    for u in (
        # docs.docker.com/docker-hub/usage/: 10 anonymous pulls per hour per IPv4 address.
        Upstream("docker.io", "docker-hub", rate_limited=True),
        Upstream("nvcr.io", "nvcr"),
        Upstream("registry.k8s.io", "registry-k8s"),
        Upstream("mcr.microsoft.com", "mcr"),
        Upstream("quay.io", "quay"),
        Upstream("ghcr.io", "ghcr"),
        Upstream("gcr.io", "gcr"),
    )
}


def qualified(reference: str) -> str:
    """`reference` with its registry spelled out (Docker's rule: a first part without a dot, colon or `localhost`
    is a Docker Hub repository; a single name is under `library/`)."""
    first, _, rest = reference.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return reference
    return f"docker.io/{reference if rest else 'library/' + reference}"


def upstream_of(reference: str) -> Upstream:
    """The upstream registry `reference` pulls from; a ValueError names the registries the platform mirrors."""
    host = qualified(reference).split("/", 1)[0]
    if host not in UPSTREAMS:
        raise ValueError(f"{reference}: registry {host} has no cache rule; mirrored registries: {sorted(UPSTREAMS)}")
    return UPSTREAMS[host]


_LOGIN_SERVER: ContextVar[str | None] = ContextVar("registry_login_server", default=None)


@contextmanager
def pulled_through(login_server: str) -> Generator[None]:
    """Within this block `mirrored` rewrites every reference to `login_server` (one platform's ACR)."""
    token = _LOGIN_SERVER.set(login_server)
    try:
        yield
    finally:
        _LOGIN_SERVER.reset(token)


def mirrored_repository(repository: str) -> str:
    """`<login server>/<upstream host>/<path>` for charts that take repository (or hub) and tag apart; the upstream
    repository as given outside a platform (a component built on its own)."""
    login_server = _LOGIN_SERVER.get()
    if login_server is None:
        return repository
    full = qualified(f"{repository}:_").rsplit(":", 1)[0]
    return f"{login_server}/{upstream_of(full).target}/{full.split('/', 1)[1]}"


def mirrored(reference: str) -> str:
    """The image to pull for upstream `reference` (`registry/repository:tag`): through the platform's registry,
    by the digest an upstream source records (`PINNED`), else by tag (then `UNPINNED` says why)."""
    repository, _, tag = reference.rpartition(":")
    pinned_reference = PINNED.get(qualified(reference))
    suffix = f"{tag}@{pinned_reference.digest}" if pinned_reference else tag
    return f"{mirrored_repository(repository)}:{suffix}"


def mirrored_parts(reference: str) -> dict[str, str]:
    """`registry`, `repository` and `tag` of the image to pull for `reference`, for charts that join
    `registry/repository:tag`: the registry is `<login server>/<upstream host>` inside a platform."""
    qualified_reference = qualified(reference)
    host, _, path = qualified_reference.partition("/")
    repository, _, _ = path.rpartition(":")
    registry = mirrored_repository(f"{host}/{repository}").removesuffix(f"/{repository}")
    return {"registry": registry, "repository": repository, "tag": mirrored(qualified_reference).rsplit(":", 1)[1]}


def mirrored_repository_and_tag(reference: str) -> dict[str, str]:
    """`repository` and `tag` of the image to pull for `reference`, for charts that join `repository:tag`."""
    repository, _, tag = mirrored(reference).rpartition(":")
    return {"repository": repository, "tag": tag}


# Images charts run at their own image defaults (the values that would point them at the registry are not set yet),
# so the nodes still pull them from upstream: `make plan` lists them, each with the release that runs it.
FROM_UPSTREAM: dict[str, str] = {
    "registry.k8s.io/nfd/*": "AMD GPU Operator: node-feature-discovery",
    "mcr.microsoft.com/oss/v2/kubernetes-csi/*": "azurelustre-csi-driver (its 0.6.0 chart is published without "
    "source: the values keys that would move its images are unread)",
    "ghcr.io/nvidia/nvsentinel/*": "nvsentinel",
    "docker.io/bitnamilegacy/*": "nvsentinel: MongoDB, its exporter, nginx and kubectl",
    "docker.io/rocm/*": "AMD GPU Operator, KMM and their operands",
    "rocm/*": "AMD GPU Operator: device plugin and node labeller",
    "gcr.io/kaniko-project/*": "AMD GPU Operator: KMM's driver builder",
    "docker.io/ubuntu:*": "AMD GPU Operator: the driver build's base image",
    "docker.io/library/busybox:*": "AMD GPU Operator: the operands' init container",
}


def _matches(reference: str, pattern: str) -> bool:
    return reference == pattern or (pattern.endswith("*") and reference.startswith(pattern[:-1]))
