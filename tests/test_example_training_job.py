"""The example consumer stack: a distributed training Job wired to the platform through a StackReference."""

from __future__ import annotations

import runpy
from typing import Any

import pytest

from components.gpu_scheduling import GPU_POOL_NAME_LABEL_KEY, GPU_RESOURCE, pod_fits_node
from config import ConfigError
from tests.scheduling import node_template
from tools.offline import Recording, run_under_mocks
from tools.render import kubernetes_object, validate_object
from tools.stack_files import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "training-job"
PLATFORM = "organization/aks-gpu-platform/dev"
KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"
PLATFORM_OUTPUTS = {
    "kubeconfig": KUBECONFIG,
    "lustrePvcName": "lustre-shared",
    "lustreNamespace": "training",
    "gpuPoolNames": ["gpua100", "gpuh100"],
}
SCHEMA_VERSION = "1.33.0"


def run_example(**settings: Any) -> Recording:
    config = {"training-job:platformStack": PLATFORM, "training-job:completions": "4", "training-job:parallelism": "4"}
    config.update({f"training-job:{k}": str(v) for k, v in settings.items()})
    return run_under_mocks(
        lambda: runpy.run_path(str(EXAMPLE / "__main__.py"), run_name="__main__"),
        config=config,
        project="training-job",
        stack="dev",
        stack_references={PLATFORM: PLATFORM_OUTPUTS},
    )


@pytest.fixture(scope="module")
def example() -> Recording:
    return run_example()


def job_spec(recording: Recording) -> dict[str, Any]:
    return recording.one("kubernetes:batch/v1:Job").inputs["spec"]


def test_reads_the_platform_stack_and_targets_its_cluster(example: Recording) -> None:
    ref = example.one("pulumi:pulumi:StackReference")
    assert ref.name == PLATFORM, "the example must read the platform stack named in platformStack"
    provider = example.one("pulumi:providers:kubernetes")
    assert provider.inputs["kubeconfig"] == KUBECONFIG, "objects must go to the platform's cluster"
    objects = example.kubernetes_objects()
    assert objects, "the example creates Kubernetes objects"
    for obj in objects:
        assert obj.provider.startswith(provider.urn), f"{obj.name} must use the platform's kubeconfig provider"
        assert obj.inputs["metadata"]["namespace"] == "training", f"{obj.name} must live beside the Lustre PVC"


def test_indexed_job_one_gpu_per_rank_on_gpu_nodes(example: Recording) -> None:
    spec = job_spec(example)
    assert spec["completionMode"] == "Indexed", "each rank needs a stable index"
    assert spec["completions"] == spec["parallelism"] == 4, "completions/parallelism come from config"
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    for bound in ("requests", "limits"):
        assert container["resources"][bound][GPU_RESOURCE] == "1", f"one GPU per pod ({bound})"
    # A node of the platform's GPU pools, as the design notes describe it (label pool=gpu, taint sku=gpu).
    gpu_pool = {"agentPoolName": "gpua100", "vmSize": "Standard_NC24ads_A100_v4", "nodeLabels": {"pool": "gpu"}}
    node = node_template({**gpu_pool, "nodeTaints": ["sku=gpu:NoSchedule"]})
    assert pod_fits_node(pod, node.labels, node.taints), "the ranks must land on the platform's GPU nodes"
    cpu = node_template({**gpu_pool, "vmSize": "Standard_D8ds_v5", "nodeLabels": {"pool": "cpu"}})
    assert not pod_fits_node(pod, cpu.labels, cpu.taints), "GPU ranks must not wait on CPU nodes"
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["WORLD_SIZE"] == "4", "the world size is the number of ranks"
    assert env["MASTER_ADDR"] == "train-0.train", "rank 0 is reached through the headless Service"
    service = example.one("kubernetes:core/v1:Service")
    assert pod["subdomain"] == service.inputs["metadata"]["name"], "ranks get DNS names only under their Service"
    assert service.inputs["spec"]["clusterIP"] == "None", "the rendezvous Service must be headless"


def test_lustre_pvc_mounted_and_checkpoints_on_it(example: Recording) -> None:
    pod = job_spec(example)["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["lustre"]["persistentVolumeClaim"]["claimName"] == "lustre-shared", "must mount the platform PVC"
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "lustre")["mountPath"]
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env["CHECKPOINT_DIR"].startswith(mount + "/"), "checkpoints must land on the shared Lustre volume"
    assert example.stack_outputs["checkpointDir"] == env["CHECKPOINT_DIR"]
    script = example.one("kubernetes:core/v1:ConfigMap").inputs["data"]["train.py"]
    assert "CHECKPOINT_DIR" in script, "the training script must write where the Job says"


def test_pdb_protects_every_running_rank(example: Recording) -> None:
    pdb = example.one("kubernetes:policy/v1:PodDisruptionBudget").inputs["spec"]
    labels = job_spec(example)["template"]["metadata"]["labels"]
    assert pdb["minAvailable"] == 4, "a drain must not evict any rank of a running job"
    assert pdb["selector"]["matchLabels"] == labels, "the PDB must select the Job's pods"


def test_restricted_security_context(example: Recording) -> None:
    pod = job_spec(example)["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    ctx = pod["containers"][0]["securityContext"]
    assert ctx == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}


def test_objects_pass_the_strict_upstream_schema(example: Recording) -> None:
    objects = example.kubernetes_objects()
    assert {o.type for o in objects} == {
        "kubernetes:core/v1:ConfigMap",
        "kubernetes:core/v1:Service",
        "kubernetes:batch/v1:Job",
        "kubernetes:policy/v1:PodDisruptionBudget",
    }
    for obj in objects:
        status, detail = validate_object(kubernetes_object(obj), SCHEMA_VERSION)
        assert status == "valid", f"{obj.type} {obj.name}: {detail}"


def test_pinned_pool_must_be_a_platform_pool() -> None:
    pinned = run_example(gpuPool="gpuh100")
    selector = job_spec(pinned)["template"]["spec"]["nodeSelector"]
    assert selector[GPU_POOL_NAME_LABEL_KEY] == "gpuh100", "gpuPool pins the ranks to that pool"
    with pytest.raises(Exception, match="gpuPool: 'gpux' is not a GPU pool"):
        run_example(gpuPool="gpux")


def test_parallelism_must_equal_completions() -> None:
    with pytest.raises(ConfigError, match="parallelism:"):
        run_example(parallelism=2)
