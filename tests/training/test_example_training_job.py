"""The example consumer stack: a training JobSet submitted through a team's Kueue LocalQueue.

The platform outputs the example reads are the prod stack's own (`trainingTeams`), and admission is
checked against the prod stack's recorded ClusterQueues, ResourceFlavors and GPU pools; on a Grace-Blackwell
pool, against the grace-blackwell variant of tests/gpu/test_scheduling.py.
"""

from __future__ import annotations

import ast
import re
import runpy
from typing import Any

import jsonschema
import pytest
import yaml

from aks_gpu_platform.config import ConfigError
from aks_gpu_platform.config.catalog.image_platforms import runs_on_arm64
from aks_gpu_platform.config.gpu.scheduling import GPU_RESOURCE
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording, evaluate, kubernetes_object
from aks_gpu_platform.testing.checks import validate_object
from tests.upstream.crd_schema import crd_problems
from tests.upstream.kube_scheduler import pod_fits_node
from tests.upstream.scheduling import RELEASE, node_templates
from tools import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "training-job"
PLATFORM = "organization/aks-gpu-platform/prod"
KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"
SCHEMA_VERSION = "1.33.0"
JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"
TEAM = "llm"
COMPUTE_DOMAIN = "kubernetes:resource.nvidia.com/v1beta1:ComputeDomain"
COMPUTE_DOMAIN_CRD = "computedomains-v0.4.0.json"
GB_TEAM = "ml"
# A ReadWriteMany claim the team brings: Lustre cannot serve Arm64 pools (its CSI node is amd64-only).
GB_CLAIM = "ml-checkpoints"
# Set by torchrun for every process it starts (torch.distributed.run).
TORCHRUN_ENV = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}

# Reduced JSON Schema of the JobSet fields the example sets, from the v1alpha2 openAPIV3Schema of
# kubernetes-sigs/jobset @ v0.12.0, charts/jobset/crds/jobset.x-k8s.io_jobsets.yaml (no registry
# package ships it). The Job template inside is checked against the real batch/v1 schema below.
JOBSET_SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["replicatedJobs"],
    "properties": {
        "network": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "enableDNSHostnames": {"type": "boolean"},
                "publishNotReadyAddresses": {"type": "boolean"},
            },
        },
        "coordinator": {
            "type": "object",
            "additionalProperties": False,
            "required": ["replicatedJob"],
            "properties": {
                "replicatedJob": {"type": "string"},
                "jobIndex": {"type": "integer"},
                "podIndex": {"type": "integer"},
            },
        },
        "failurePolicy": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "maxRestarts": {"type": "integer"},
                "restartStrategy": {"enum": ["Recreate", "BlockingRecreate", "InPlaceRestart"]},
            },
        },
        "successPolicy": {
            "type": "object",
            "additionalProperties": False,
            "required": ["operator"],
            "properties": {"operator": {"enum": ["All", "Any"]}},
        },
        "ttlSecondsAfterFinished": {"type": "integer", "minimum": 0},
        "replicatedJobs": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "template"],
                "properties": {
                    "name": {"type": "string"},
                    "replicas": {"type": "integer"},
                    "template": {"type": "object", "required": ["spec"]},
                },
            },
        },
    },
}


def environment_read(script: str) -> set[str]:
    """The `os.environ[...]` keys a Python script reads (it must parse)."""
    return {
        str(node.slice.value)
        for node in ast.walk(ast.parse(script))
        if isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and ast.unparse(node.value) == "os.environ"
    }


def run_example(outputs: dict[str, Any], team: str = TEAM, **settings: Any) -> Recording:
    config = {"training-job:platformStack": PLATFORM, "training-job:team": team, "training-job:nodes": "4"}
    config.update({f"training-job:{k}": str(v) for k, v in settings.items()})
    return evaluate(
        lambda: runpy.run_path(str(EXAMPLE / "__main__.py"), run_name="__main__"),
        config=config,
        project="training-job",
        stack="dev",
        stack_references={PLATFORM: outputs},
    )


@pytest.fixture(scope="module")
def platform_outputs(prod_recording: Recording) -> dict[str, Any]:
    return {"kubeconfig": KUBECONFIG, "trainingTeams": prod_recording.stack_outputs["trainingTeams"]}


@pytest.fixture(scope="module")
def example(platform_outputs: dict[str, Any]) -> Recording:
    return run_example(platform_outputs)


def jobset(recording: Recording) -> dict[str, Any]:
    return kubernetes_object(recording.one(JOBSET))


def the_pod_set(recording: Recording) -> tuple[dict[str, Any], int]:
    """The JobSet's single replicated job as Kueue sees it: one pod set of `count` identical pods."""
    (replicated,) = jobset(recording)["spec"]["replicatedJobs"]
    job = replicated["template"]["spec"]
    return job["template"], replicated["replicas"] * job["parallelism"]


def quantity(value: Any) -> float:
    """A Kubernetes quantity as a number (the forms the example and the prod quotas use)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|Ti)?", str(value))
    assert match, f"unexpected quantity {value!r}"
    scale = {None: 1, "m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[match.group(2)]
    return float(match.group(1)) * scale


def admit(platform: Recording, queue_name: str, namespace: str, pod: dict[str, Any], count: int) -> str | None:
    """Kueue's flavor assignment for one pod set on an idle cluster, without borrowing: the first flavor
    of the ClusterQueue behind the LocalQueue whose node labels agree with the pod's nodeSelector and
    whose nominal quota covers every metered resource the pod set requests; None if none does."""
    local = [
        kubernetes_object(r)
        for r in platform.of_type(KUEUE + "LocalQueue")
        if r.inputs["metadata"]["name"] == queue_name and r.inputs["metadata"]["namespace"] == namespace
    ]
    if not local:
        return None
    queues = {r.inputs["metadata"]["name"]: kubernetes_object(r) for r in platform.of_type(KUEUE + "ClusterQueue")}
    flavors = {r.inputs["metadata"]["name"]: kubernetes_object(r) for r in platform.of_type(KUEUE + "ResourceFlavor")}
    queue = queues[local[0]["spec"]["clusterQueue"]]["spec"]
    requests = pod["spec"]["containers"][0]["resources"]["requests"]
    selector = pod["spec"].get("nodeSelector") or {}
    for group in queue["resourceGroups"]:
        for flavor in group["flavors"]:
            labels = flavors[flavor["name"]]["spec"]["nodeLabels"]
            if any(labels.get(k, v) != v for k, v in selector.items()):
                continue
            quota = {r["name"]: quantity(r["nominalQuota"]) for r in flavor["resources"]}
            if all(quantity(requests.get(r, 0)) * count <= quota[r] for r in group["coveredResources"]):
                return flavor["name"]
    return None


def gpu_nodes(platform: Recording) -> dict[str, tuple[dict[str, str], list[str], int]]:
    """GPU pool name -> node labels, node taints (AKS's Spot taint included) and GPUs per node."""
    from aks_gpu_platform.config.catalog.gpu_sizes import gpu_sku

    found: dict[str, tuple[dict[str, str], list[str], int]] = {}
    for node in node_templates(platform):
        if node.labels.get("pool") == "gpu":
            sku = gpu_sku(node.labels["node.kubernetes.io/instance-type"])
            assert sku is not None
            found[node.labels["gpu-pool"]] = (dict(node.labels), list(node.taints), sku.gpus_per_vm)
    assert found, "the platform must record GPU pools"
    return found


def admitted_pod(platform: Recording, pod: dict[str, Any], flavor_name: str) -> dict[str, Any]:
    """The pod spec after Kueue admits it on a flavor: the flavor's node labels and tolerations injected."""
    flavor = next(
        kubernetes_object(r)["spec"]
        for r in platform.of_type(KUEUE + "ResourceFlavor")
        if r.inputs["metadata"]["name"] == flavor_name
    )
    spec = dict(pod["spec"])
    spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **flavor["nodeLabels"]}
    spec["tolerations"] = [*(spec.get("tolerations") or []), *flavor.get("tolerations", [])]
    return spec


def test_reads_the_platform_stack_and_lives_in_the_team_namespace(example: Recording) -> None:
    ref = example.one("pulumi:pulumi:StackReference")
    assert ref.name == PLATFORM, "the example must read the platform stack named in platformStack"
    provider = example.one("pulumi:providers:kubernetes")
    assert provider.inputs["kubeconfig"] == KUBECONFIG, "objects must go to the platform's cluster"
    objects = example.kubernetes_objects()
    assert objects, "the example creates Kubernetes objects"
    for obj in objects:
        assert obj.provider.startswith(provider.urn), f"{obj.name} must use the platform's kubeconfig provider"
        assert obj.inputs["metadata"]["namespace"] == "team-llm", f"{obj.name} must live in the team's namespace"


def test_the_jobset_is_admitted_through_the_teams_local_queue(example: Recording, prod_recording: Recording) -> None:
    meta = jobset(example)["metadata"]
    queue = meta["labels"]["kueue.x-k8s.io/queue-name"]
    assert queue == prod_recording.stack_outputs["trainingTeams"][TEAM]["localQueue"]
    pod, count = the_pod_set(example)
    flavor = admit(prod_recording, queue, meta["namespace"], pod, count)
    assert flavor is not None, "4 ranks x 1 GPU must fit the llm team's quota on one of its pools"
    labels, taints, gpus_per_node = gpu_nodes(prod_recording)[flavor]
    assert pod_fits_node(admitted_pod(prod_recording, pod, flavor), labels, taints), (
        f"once admitted on {flavor}, the ranks must schedule on {flavor}'s nodes"
    )
    assert quantity(pod["spec"]["containers"][0]["resources"]["requests"][GPU_RESOURCE]) <= gpus_per_node
    assert "suspend" not in jobset(example)["spec"], "Kueue's webhook suspends it; re-sending suspend stops a run"


def test_the_admission_model_refuses_what_no_pool_of_the_team_holds(
    platform_outputs: dict[str, Any], prod_recording: Recording
) -> None:
    # vision: 10 GPUs on gpua100 (1 per node), 16 on h100z3: 3 pods x 8 GPUs = 24 fit neither.
    too_big = run_example(platform_outputs, team="vision", nodes=3, gpusPerNode=8, cpu="16", memory="64Gi")
    meta = jobset(too_big)["metadata"]
    pod, count = the_pod_set(too_big)
    assert admit(prod_recording, meta["labels"]["kueue.x-k8s.io/queue-name"], meta["namespace"], pod, count) is None
    fits = run_example(platform_outputs, team="vision", nodes=2, gpusPerNode=8, cpu="16", memory="64Gi")
    meta = jobset(fits)["metadata"]
    pod, count = the_pod_set(fits)
    assert admit(prod_recording, meta["labels"]["kueue.x-k8s.io/queue-name"], meta["namespace"], pod, count) == "h100z3"
    assert admit(prod_recording, "llm", meta["namespace"], pod, count) is None, "another team's queue is not there"


def test_all_ranks_are_one_pod_set_so_they_share_one_pool(example: Recording) -> None:
    spec = jobset(example)["spec"]
    (replicated,) = spec["replicatedJobs"]
    job = replicated["template"]["spec"]
    assert replicated["replicas"] == 1 and job["completions"] == job["parallelism"] == 4, (
        "one replicated job with every rank: Kueue gives one pod set one flavor, i.e. one InfiniBand fabric"
    )
    assert job["completionMode"] == "Indexed", "each pod's completion index is its node rank"


def test_rendezvous_comes_from_jobset_not_a_hand_made_service(example: Recording) -> None:
    assert not example.of_type("kubernetes:core/v1:Service"), "JobSet creates the headless Service itself"
    spec = jobset(example)["spec"]
    assert spec["network"]["enableDNSHostnames"] is True
    coordinator = spec["coordinator"]
    (replicated,) = spec["replicatedJobs"]
    assert coordinator["replicatedJob"] == replicated["name"] and coordinator["podIndex"] == 0
    pod = replicated["template"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["MASTER_ADDR"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.annotations['jobset.sigs.k8s.io/coordinator']"
    ), "rank 0's address is the coordinator endpoint JobSet writes on every pod"
    assert env["NODE_RANK"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    )
    command = container["command"]
    assert command[0] == "torchrun"
    assert (
        "--nnodes=4" in command and "--node-rank=$(NODE_RANK)" in command and "--master-addr=$(MASTER_ADDR)" in command
    )
    gpus = container["resources"]["limits"][GPU_RESOURCE]
    assert f"--nproc-per-node={gpus}" in command, "one process per GPU the pod holds"


def test_lustre_claim_mounted_and_checkpoints_on_it(example: Recording, prod_recording: Recording) -> None:
    pod, _ = the_pod_set(example)
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    claim = prod_recording.stack_outputs["trainingTeams"][TEAM]["lustrePvcName"]
    assert volumes["lustre"]["persistentVolumeClaim"]["claimName"] == claim, "must mount the team's Lustre claim"
    (container,) = pod["spec"]["containers"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "lustre")["mountPath"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["CHECKPOINT_DIR"].startswith(mount + "/"), "checkpoints must land on the shared Lustre volume"
    assert example.stack_outputs["checkpointDir"] == env["CHECKPOINT_DIR"] == "/mnt/lustre/checkpoints/train"
    assert jobset(example)["spec"]["failurePolicy"]["maxRestarts"] == 3, (
        "a failed rank restarts all from the checkpoint"
    )


def test_the_script_reads_only_environment_the_pod_and_torchrun_provide(example: Recording) -> None:
    script = example.one("kubernetes:core/v1:ConfigMap").inputs["data"]["train.py"]
    read = environment_read(script)  # parses: the mounted script is valid Python
    assert read, "the script takes its settings from the environment"
    pod, _ = the_pod_set(example)
    given = {e["name"] for e in pod["spec"]["containers"][0]["env"]} | TORCHRUN_ENV
    assert read <= given, f"the script reads {read - given}, which nobody sets"
    assert "CHECKPOINT_DIR" in read and "SIGTERM" in script, "it checkpoints to Lustre, also when preempted"


def test_pdb_protects_every_running_rank(example: Recording) -> None:
    pdb = example.one("kubernetes:policy/v1:PodDisruptionBudget").inputs["spec"]
    pod, count = the_pod_set(example)
    assert pdb["minAvailable"] == count, "a drain must not evict any rank of a running job"
    assert pdb["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(), "the PDB selects the ranks"


def test_restricted_security_context(example: Recording) -> None:
    pod, _ = the_pod_set(example)
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert pod["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    ctx = pod["spec"]["containers"][0]["securityContext"]
    assert ctx == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}


def test_objects_pass_the_upstream_schemas(example: Recording) -> None:
    objects = example.kubernetes_objects()
    assert {o.type for o in objects} == {
        "kubernetes:core/v1:ConfigMap",
        JOBSET,
        "kubernetes:policy/v1:PodDisruptionBudget",
    }
    for obj in objects:
        manifest = kubernetes_object(obj)
        if obj.type == JOBSET:
            jsonschema.validate(manifest["spec"], JOBSET_SPEC_SCHEMA)
            for replicated in manifest["spec"]["replicatedJobs"]:
                job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}, **replicated["template"]}
                status, detail = validate_object(job, SCHEMA_VERSION)
                assert status == "valid", f"replicatedJobs[{replicated['name']}] is not a valid Job template: {detail}"
            continue
        status, detail = validate_object(manifest, SCHEMA_VERSION)
        assert status == "valid", f"{obj.type} {obj.name}: {detail}"


def test_pinned_pool_must_be_one_of_the_teams_pools(platform_outputs: dict[str, Any]) -> None:
    pinned = run_example(platform_outputs, gpuPool="h100z2")
    pod, _ = the_pod_set(pinned)
    assert pod["spec"]["nodeSelector"] == {"gpu-pool": "h100z2"}, "gpuPool pins the ranks to that pool's flavor"
    with pytest.raises(Exception, match=r"gpuPool: 'h100z9' is not a pool the team has quota on"):
        run_example(platform_outputs, gpuPool="h100z9")


def test_unknown_team_or_team_without_lustre_is_a_clear_error(platform_outputs: dict[str, Any]) -> None:
    with pytest.raises(Exception, match=r"team: 'nlp' is not a team of the platform stack"):
        run_example(platform_outputs, team="nlp")
    no_lustre = {**platform_outputs, "trainingTeams": {"ml": {"namespace": "team-ml", "localQueue": "ml"}}}
    with pytest.raises(Exception, match=r"team: 'ml' has no Lustre claim"):
        run_example(no_lustre, team="ml")


def test_job_name_must_leave_room_for_the_coordinator_label(platform_outputs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="jobName:"):
        run_example(platform_outputs, jobName="a" * 25)


@pytest.fixture(scope="module")
def gb_platform() -> Recording:
    from tests.gpu.test_scheduling import variant_config  # tests.gpu.test_scheduling imports this module

    return run_stack("dev", variant_config("grace-blackwell"))


@pytest.fixture(scope="module")
def gb_outputs(gb_platform: Recording) -> dict[str, Any]:
    return {"kubeconfig": KUBECONFIG, "trainingTeams": gb_platform.stack_outputs["trainingTeams"]}


@pytest.fixture(scope="module")
def gb_example(gb_outputs: dict[str, Any]) -> Recording:
    return run_example(gb_outputs, team=GB_TEAM, nodes=2, gpusPerNode=4, computeDomain="true", checkpointClaim=GB_CLAIM)


def test_on_a_multi_node_nvlink_pool_the_job_claims_a_channel_of_its_own_compute_domain(gb_example: Recording) -> None:
    domain_resource = gb_example.one(COMPUTE_DOMAIN)
    domain = kubernetes_object(domain_resource)
    pod, count = the_pod_set(gb_example)
    assert domain["metadata"]["namespace"] == jobset(gb_example)["metadata"]["namespace"], (
        "the domain's controller creates the claim template in the domain's namespace; pods resolve it in theirs"
    )
    assert domain["spec"]["numNodes"] == count, "the domain reads Ready once every rank's node has joined"
    (claim,) = pod["spec"]["resourceClaims"]
    assert claim["resourceClaimTemplateName"] == domain["spec"]["channel"]["resourceClaimTemplate"]["name"], (
        "each rank must claim the template its job's domain creates, or it joins no IMEX domain"
    )
    (container,) = pod["spec"]["containers"]
    assert container["resources"]["claims"] == [{"name": claim["name"]}], (
        "a container that does not name the pod's claim gets no IMEX channel device"
    )
    assert domain_resource.urn in gb_example.one(JOBSET).depends_on, (
        "Kueue reads the claim template when admitting: the domain must exist before the JobSet"
    )
    assert "spec" in domain_resource.replace_on_changes and domain_resource.delete_before_replace, (
        "the CRD makes spec immutable: a changed node count must replace the domain, not fail an update"
    )


def test_the_default_training_image_runs_on_the_arm64_grace_blackwell_nodes(gb_example: Recording) -> None:
    pod, _ = the_pod_set(gb_example)
    (trainer,) = pod["spec"]["containers"]
    assert runs_on_arm64(trainer["image"]), (
        f"{trainer['image']} has no verified arm64 build: every rank on the GB200 pool would die with "
        "`exec format error`"
    )


def test_rendered_compute_domains_pass_the_pinned_driver_crd(gb_example: Recording, gb_platform: Recording) -> None:
    domains = [
        o
        for o in [*gb_example.kubernetes_objects(), *gb_platform.kubernetes_objects()]
        if o.type.startswith("kubernetes:resource.nvidia.com/")
    ]
    assert domains, "the example on a Grace-Blackwell pool renders a ComputeDomain"
    for obj in domains:
        problems = crd_problems(kubernetes_object(obj), COMPUTE_DOMAIN_CRD)
        assert not problems, f"{obj.name}: the driver v0.4.0 API server would refuse or prune it: {problems}"
    for replicated in jobset(gb_example)["spec"]["replicatedJobs"]:
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}, **replicated["template"]}
        status, detail = validate_object(job, SCHEMA_VERSION)
        assert status == "valid", f"the Job template with resource claims is not a valid Job: {detail}"


def test_the_crd_check_refuses_what_the_api_server_would_prune_or_reject() -> None:
    good = {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "d"},
        "spec": {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "d-channel"}}},
    }
    assert crd_problems(good, COMPUTE_DOMAIN_CRD) == []
    misspelt = {**good, "spec": {"numNode": 2, "channel": {"resourceClaimTemplate": {"name": "d-channel"}}}}
    assert any("numNode" in p for p in crd_problems(misspelt, COMPUTE_DOMAIN_CRD)), "an unknown field is pruned"
    no_template = {**good, "spec": {"channel": {"allocationMode": "Many"}}}
    assert len(crd_problems(no_template, COMPUTE_DOMAIN_CRD)) == 2, "a bad enum and a missing required field"


def test_kueue_admits_the_compute_domain_job_on_gpu_quota_alone(gb_example: Recording, gb_platform: Recording) -> None:
    meta = jobset(gb_example)["metadata"]
    pod, count = the_pod_set(gb_example)
    flavor = admit(gb_platform, meta["labels"]["kueue.x-k8s.io/queue-name"], meta["namespace"], pod, count)
    assert flavor == "gb200", "2 ranks x 4 GPUs fit the team's 8 GB200 GPUs"
    labels, taints, _ = gpu_nodes(gb_platform)[flavor]
    assert pod_fits_node(admitted_pod(gb_platform, pod, flavor), labels, taints), "the ranks must fit a GB200 node"
    # kueue v0.19.2: pkg/dra/claims.go counts each channel claim as the mapped resource; flavorassigner.go skips
    # a resource the ClusterQueue does not declare when quotaCheckStrategy is IgnoreUndeclared.
    kueue = yaml.safe_load(
        gb_platform.one(RELEASE, "kueue").inputs["values"]["managerConfig"]["controllerManagerConfigYaml"]
    )
    (mapping,) = kueue["resources"]["deviceClassMappings"]
    assert kueue["resources"]["quotaCheckStrategy"] == "IgnoreUndeclared"
    declared = {
        resource
        for r in gb_platform.of_type(KUEUE + "ClusterQueue")
        for group in kubernetes_object(r)["spec"]["resourceGroups"]
        for resource in group["coveredResources"]
    }
    assert mapping["name"] not in declared, "a declared channel resource without quota would never admit the job"


def test_compute_domain_only_where_the_job_lands_on_multi_node_nvlink(
    gb_outputs: dict[str, Any], platform_outputs: dict[str, Any]
) -> None:
    with pytest.raises(Exception, match=r"computeDomain: .*'h100z2'.* no multi-node NVLink"):
        run_example(platform_outputs, computeDomain="true", gpuPool="h100z2")
    with pytest.raises(Exception, match=r"computeDomain: 2 ranks on multi-node NVLink pool\(s\) \['gb200'\]"):
        run_example(gb_outputs, team=GB_TEAM, nodes=2, checkpointClaim=GB_CLAIM)
    assert not run_example(platform_outputs).of_type(COMPUTE_DOMAIN), "x86 pools get no ComputeDomain"


def test_without_lustre_the_checkpoints_go_to_the_named_claim(
    gb_outputs: dict[str, Any], gb_example: Recording
) -> None:
    with pytest.raises(Exception, match=r"team: 'ml' has no Lustre claim.*checkpointClaim"):
        run_example(gb_outputs, team=GB_TEAM, nodes=2, computeDomain="true")
    pod, _ = the_pod_set(gb_example)
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["checkpoints"]["persistentVolumeClaim"]["claimName"] == GB_CLAIM
    (container,) = pod["spec"]["containers"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "checkpoints")["mountPath"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["CHECKPOINT_DIR"].startswith(mount + "/"), "checkpoints must land on the shared claim"


def test_the_example_jobset_and_its_ranks_pass_the_team_namespace_admission_policy(
    example: Recording, prod_recording: Recording
) -> None:
    """The team-pod-boundary policy refuses GPU tolerations without GPUs: the example's ranks ask for GPUs, so they
    are admitted as written and as Kueue places them on each of the team's flavors."""
    from tests.training.test_tenancy import gpu_flavors, kueue_admitted, world
    from tests.upstream.tenancy import pod_refusals, policy_refusals

    w = world("prod")
    manifest = jobset(example)
    namespace = manifest["metadata"]["namespace"]
    assert not policy_refusals(w, namespace, manifest, "jobset.x-k8s.io", "jobsets"), "the JobSet is accepted"
    pod, _ = the_pod_set(example)
    assert not pod_refusals(w, namespace, pod["spec"]), "its ranks are admitted before Kueue places them"
    for flavor in gpu_flavors(w):
        assert not pod_refusals(w, namespace, kueue_admitted(pod["spec"], flavor)), (
            "its ranks are admitted once Kueue adds a GPU flavor's labels and tolerations"
        )
