"""The CPU platforms each pinned image the platform runs on GPU nodes is built for.

An Arm64 GPU pool (Grace-Blackwell) can only run images with a `linux/arm64` variant; a pod whose image has
none fails with `exec format error` on the node. Each row names the build file at the pinned tag that sets
the image's platforms (or, where the publisher has none, a multi-platform build from that tag). An image without a
row is treated as unverified and refused on Arm64 pools.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import ConfigError
from .images import qualified

ARM64 = "arm64"


@dataclass(frozen=True)
class ImagePlatforms:
    platforms: frozenset[str]
    """Architectures the image's manifest list holds (`kubernetes.io/arch` spelling)."""
    source: str
    """Build file at the pinned tag that sets them."""


_BOTH = frozenset({"amd64", ARM64})

# Keyed by repository (registry/path, no tag; Docker Hub's spelled `docker.io/...`), or by a prefix ending in `/`
# for every repository under it; the frozenset lists the tags the source was read at.
IMAGE_PLATFORMS: dict[str, tuple[frozenset[str], ImagePlatforms]] = {
    "nvcr.io/nvidia/k8s-device-plugin": (
        frozenset({"v0.20.0"}),
        ImagePlatforms(
            _BOTH,
            "NVIDIA/k8s-device-plugin v0.20.0 .github/workflows/image.yaml: one build per matrix arch "
            "(amd64, arm64), joined by `docker manifest create`",
        ),
    ),
    "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu": (
        frozenset({"v0.4.0"}),
        ImagePlatforms(
            _BOTH,
            "NVIDIA/k8s-dra-driver-gpu v0.4.0 hack/build-and-publish-image.sh (BUILD_MULTI_ARCH_IMAGES=true) and "
            "deployments/container/Makefile (--platform=linux/amd64,linux/arm64)",
        ),
    ),
    "nvcr.io/nvidia/k8s/dcgm-exporter": (
        frozenset({"4.5.3-4.8.2-distroless", "4.6.0-4.8.3-distroless"}),
        ImagePlatforms(_BOTH, "NVIDIA/dcgm-exporter 4.5.3-4.8.2 Makefile: PLATFORMS := linux/amd64,linux/arm64"),
    ),
    "nvcr.io/nvidia/cloud-native/dcgm": (
        frozenset({"4.5.2-1-ubuntu22.04"}),
        ImagePlatforms(_BOTH, "NVIDIA/DCGM v4.5.2 docker/Makefile: PLATFORMS := linux/amd64,linux/arm64"),
    ),
    # Every repository under this prefix (the agents and controllers): one workflow publishes them all.
    "ghcr.io/nvidia/nvsentinel/": (
        frozenset({"v1.19.0"}),
        ImagePlatforms(
            _BOTH,
            "NVIDIA/NVSentinel (fork lalitadithya/NVSentinel@e002c5dc) .github/workflows/publish.yml: "
            "PLATFORMS: linux/amd64,linux/arm64",
        ),
    ),
    # docker.io; NVIDIA's build repository is gitlab.com/nvidia/container-images/cuda, read through its GitHub mirror.
    "docker.io/nvidia/cuda": (
        frozenset({"12.4.1-base-ubuntu22.04"}),
        ImagePlatforms(
            _BOTH,
            "gitlab.com/nvidia/container-images/cuda a819e795 (2024-05-31, mirror pranavmishra90/"
            "nvidia-container-images-cuda) dist/12.4.1/cuda-platforms.json: ubuntu22.04 = arm64, x86_64; "
            "dist/12.4.1/ubuntu2204/base/Dockerfile has a base-arm64 stage (NVARCH sbsa)",
        ),
    ),
    # NGC publishes no build file; Microsoft builds its AKS NCCL test image from this tag for both platforms
    # and runs it on GB300 nodes (a buildx build for linux/arm64 fails on a base without an arm64 variant).
    "nvcr.io/nvidia/pytorch": (
        frozenset({"26.03-py3"}),
        ImagePlatforms(
            _BOTH,
            "Azure/ai-infrastructure-on-azure 4be143da infrastructure_validations/aks/NCCL/docker/Dockerfile "
            "(FROM nvcr.io/nvidia/pytorch:26.03-py3), .github/workflows/build_nccl_image.yaml "
            "(platforms: linux/amd64,linux/arm64), helm/nccl-test/values-gb300.yaml (same image on GB300)",
        ),
    ),
    "nvcr.io/nvidia/mellanox/k8s-rdma-shared-dev-plugin": (
        frozenset({"network-operator-v26.4.1"}),
        ImagePlatforms(
            _BOTH,
            "Mellanox/k8s-rdma-shared-dev-plugin .github/workflows/netop-ci.yml (027685858c): `network-operator-*` "
            "tags are built by Mellanox/cloud-orchestration-reusable-workflows .github/workflows/fork-ci-reusable.yml "
            "(0c2a162b, called at @main): BUILD_PLATFORMS linux/amd64,linux/arm64 for every non-STIG image",
        ),
    ),
    # The GPU Operator v26.7.0's operands (components/gpu/node_images.py): the driver container per node OS, and the
    # images its ClusterPolicy and node-feature-discovery subchart run on every GPU node.
    "nvcr.io/nvidia/driver": (
        frozenset({"595.91.07-ubuntu22.04", "595.91.07-ubuntu24.04"}),
        ImagePlatforms(
            _BOTH,
            "NVIDIA/gpu-driver-container d10b41a (2026-08-03, adds 595.91.07 to versions.mk): multi-arch.mk builds "
            "--platform=linux/amd64,linux/arm64 for every distribution but signed_ubuntu22.04, signed_ubuntu26.04 "
            "and azure-fde kernels; ubuntu24.04/Dockerfile installs per TARGETARCH",
        ),
    ),
    "nvcr.io/nvidia/cloud-native/k8s-driver-manager": (
        frozenset({"v0.12.0"}),
        ImagePlatforms(
            _BOTH,
            "NVIDIA/k8s-driver-manager v0.12.0 deployments/container/multi-arch.mk (--platform=linux/amd64,linux/arm64)"
            " and .github/workflows/image.yaml (arm64 in the build matrix)",
        ),
    ),
    "nvcr.io/nvidia/k8s/container-toolkit": (
        frozenset({"v1.20.0"}),
        ImagePlatforms(
            _BOTH,
            "NVIDIA/nvidia-container-toolkit v1.20.0 deployments/container/multi-arch.mk "
            "(--platform=linux/amd64,linux/arm64), .github/workflows/image.yaml (arm64 packages and images)",
        ),
    ),
    "nvcr.io/nvidia/gpu-operator": (
        frozenset({"v26.7.0"}),
        ImagePlatforms(
            _BOTH,
            "NVIDIA/gpu-operator v26.7.0 .github/workflows/image-builds.yaml: build-gpu-operator-arm64 and -amd64, "
            "joined by `docker manifest create` (the validator runs the same image)",
        ),
    ),
    "nvcr.io/nvidia/cloud-native/k8s-mig-manager": (
        frozenset({"v0.15.0"}),
        ImagePlatforms(
            _BOTH,
            "NVIDIA/mig-parted v0.15.0 deployments/container/multi-arch.mk (--platform=linux/amd64,linux/arm64), "
            ".github/workflows/image.yaml (arm64 in the build matrix)",
        ),
    ),
    "registry.k8s.io/nfd/node-feature-discovery": (
        frozenset({"v0.19.0"}),
        ImagePlatforms(
            _BOTH,
            "kubernetes-sigs/node-feature-discovery v0.19.0 Makefile: IMAGE_ALL_PLATFORMS linux/amd64,linux/arm64,...",
        ),
    ),
    "mcr.microsoft.com/oss/v2/kubernetes-csi/azurelustre-csi": (
        frozenset({"v0.6.0"}),
        ImagePlatforms(
            frozenset({"amd64"}),
            "kubernetes-sigs/azurelustre-csi-driver 26f64420 Makefile: ALL_ARCH.linux = amd64 (arm64 commented out)",
        ),
    ),
}


def image_platforms(image: str) -> ImagePlatforms | None:
    """The platforms of a pinned image reference (`repo:tag`), or None when no row covers that tag."""
    # `repo:tag@sha256:...` (config/catalog/images.py pins multi-architecture index digests): the tag's platforms.
    tagged = qualified(image.split("@", 1)[0])  # `nvidia/cuda` and `docker.io/nvidia/cuda` are one repository
    repository, _, tag = tagged.rpartition(":") if ":" in tagged.rsplit("/", 1)[-1] else (tagged, "", "")
    row = IMAGE_PLATFORMS.get(repository) or IMAGE_PLATFORMS.get(repository.rsplit("/", 1)[0] + "/")
    # A tag the source was not read at may be built differently (NVIDIA dropped arm64 from some CUDA tags).
    if row is None or tag not in row[0]:
        return None
    return row[1]


def runs_on_arm64(image: str) -> bool:
    found = image_platforms(image)
    return found is not None and ARM64 in found.platforms


def require_arm64(pool_path: str, pool_name: str, images: Mapping[str, str]) -> None:
    """Refuse an Arm64 pool on which some platform workload (role -> image) has no arm64 build."""
    problems: list[str] = []
    for role, image in sorted(images.items()):
        if runs_on_arm64(image):
            continue
        found = image_platforms(image)
        why = (
            f"built only for {sorted(found.platforms)} ({found.source})"
            if found
            else "has no verified arm64 build (config/catalog/image_platforms.py lists the tags read and their sources)"
        )
        problems.append(
            f"{pool_path}: {pool_name!r} is an Arm64 pool, but {role} would run {image} there, which {why}; "
            "turn that setting off, use an image config/catalog/image_platforms.py lists with arm64, or use an x86 size"
        )
    if problems:
        raise ConfigError(problems)
