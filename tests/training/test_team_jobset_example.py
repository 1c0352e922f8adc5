"""examples/team-jobset/jobset.yaml, the job docs/for-ml-teams.md submits with `kubectl apply -f`.

It must pass the JobSet v1alpha2 CRD schema (JobSet v0.12.0) and the Kubernetes schema, be admitted
by the Kueue model on the dev stack's queues, land on the admitted pool's nodes, and be something the
team's own Role lets a member create.
"""

from __future__ import annotations

import re
from typing import Any

import jsonschema
import yaml

from aks_gpu_platform.config.gpu.scheduling import GPU_RESOURCE
from aks_gpu_platform.testing import Recording, kubernetes_object
from aks_gpu_platform.testing.checks import validate_object
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.training.test_example_training_job import (
    JOBSET_SPEC_SCHEMA,
    admit,
    admitted_pod,
    environment_read,
    gpu_nodes,
    quantity,
)
from tests.upstream.kube_scheduler import pod_fits_node
from tests.upstream.rbac import Request, kubernetes_allows
from tools import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "team-jobset" / "jobset.yaml"
SCHEMA = "1.33.0"
PLURALS = {"JobSet": ("jobset.x-k8s.io", "jobsets"), "PersistentVolumeClaim": ("", "persistentvolumeclaims")}


def documents() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]


def the_jobset() -> dict[str, Any]:
    (jobset,) = [d for d in documents() if d["kind"] == "JobSet"]
    return jobset


def test_the_example_passes_the_jobset_crd_and_kubernetes_schemas() -> None:
    for document in documents():
        if document["kind"] == "JobSet":
            assert document["apiVersion"] == "jobset.x-k8s.io/v1alpha2", "the version JobSet v0.12.0 serves"
            jsonschema.validate(document["spec"], JOBSET_SPEC_SCHEMA)
            for replicated in document["spec"]["replicatedJobs"]:
                job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}, **replicated["template"]}
                status, detail = validate_object(job, SCHEMA)
                assert status == "valid", f"replicatedJobs[{replicated['name']}] is not a valid Job template: {detail}"
        else:
            status, detail = validate_object(document, SCHEMA)
            assert status == "valid", f"{document['kind']}: {detail}"


def test_dev_admits_the_example_on_the_teams_pool_and_its_ranks_fit_the_nodes(dev_recording: Recording) -> None:
    jobset = the_jobset()
    meta = jobset["metadata"]
    team = dev_recording.stack_outputs["trainingTeams"]["ml"]
    assert (meta["namespace"], meta["labels"]["kueue.x-k8s.io/queue-name"]) == (team["namespace"], team["localQueue"])
    (replicated,) = jobset["spec"]["replicatedJobs"]
    job = replicated["template"]["spec"]
    pod, count = job["template"], replicated["replicas"] * job["parallelism"]
    flavor = admit(dev_recording, team["localQueue"], meta["namespace"], pod, count)
    assert flavor is not None, "the documented job must fit the dev team's GPU quota, or it waits forever"
    labels, taints, gpus_per_node = gpu_nodes(dev_recording)[flavor]
    assert pod_fits_node(admitted_pod(dev_recording, pod, flavor), labels, taints), (
        f"once admitted on {flavor}, the ranks must schedule on its nodes"
    )
    (container,) = pod["spec"]["containers"]
    assert quantity(container["resources"]["limits"][GPU_RESOURCE]) <= gpus_per_node
    nproc = re.search(r"--nproc-per-node=(\d+)", container["args"][0])
    nnodes = re.search(r"--nnodes=(\d+)", container["args"][0])
    assert nproc and nnodes, "torchrun is told the world size"
    assert int(nnodes.group(1)) == job["completions"] == count, "one torchrun node per pod"
    assert int(nproc.group(1)) == int(container["resources"]["limits"][GPU_RESOURCE]), "one process per GPU"
    assert "suspend" not in jobset["spec"], "Kueue's webhook suspends it; a job created suspended never starts"


def test_checkpoints_land_on_the_mounted_claim_and_the_script_is_valid(dev_recording: Recording) -> None:
    pod = the_jobset()["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    env = {e["name"]: e for e in container["env"]}
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    claim = next(v for v in pod["spec"]["volumes"] if v["name"] == "checkpoints")["persistentVolumeClaim"]
    assert env["CHECKPOINT_DIR"]["value"].startswith(mounts["checkpoints"] + "/"), "checkpoints must be persistent"
    claims = [d for d in documents() if d["kind"] == "PersistentVolumeClaim"]
    assert [c["metadata"]["name"] for c in claims] == [claim["claimName"]], "dev has no Lustre: the file brings one"
    assert claims[0]["spec"]["accessModes"] == ["ReadWriteMany"], "every rank on its own node mounts it"
    assert env["MASTER_ADDR"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.annotations['jobset.sigs.k8s.io/coordinator']"
    )
    script = container["args"][0].split("<<'PY'\n", 1)[1].split("\nPY\n", 1)[0]
    read = environment_read(script)
    assert read <= set(env) | {"LOCAL_RANK"}, f"the script reads {read - set(env)}, which nobody sets"
    assert "SIGTERM" in script and "os.path.exists(path)" in script, "it checkpoints on SIGTERM and resumes"


def test_a_team_member_may_apply_every_object_in_the_file(dev_recording: Recording) -> None:
    rbac = [kubernetes_object(r) for r in dev_recording.resources if r.type.startswith("kubernetes:rbac")]
    (team,) = load_stack_file("dev", REPO_ROOT)["aks-gpu-platform:training"]["teams"]
    for document in documents():
        group, plural = PLURALS[document["kind"]]
        request = Request("create", group, plural, namespace=document["metadata"]["namespace"])
        assert kubernetes_allows(rbac, set(team["members"]), request), (
            f"a member of {team['name']} must be able to kubectl apply the {document['kind']}"
        )


def test_the_pod_passes_the_restricted_pod_security_standard() -> None:
    pod = the_jobset()["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    ctx = pod["containers"][0]["securityContext"]
    assert ctx["allowPrivilegeEscalation"] is False and ctx["capabilities"]["drop"] == ["ALL"], (
        "team namespaces warn on anything short of restricted"
    )


# JobSet v0.12.0 (commit b16bcb1b) labels every pod with its JobSet's name: api/jobset/v1alpha2/jobset_types.go
# JobSetNameKey, set on each Job's pod template by pkg/controllers/jobset_controller.go labelAndAnnotateObject.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


def expand(value: str, defined: dict[str, str]) -> str:
    """Kubernetes' expansion of `$(VAR)` in an env value from the variables defined before it; `$$` escapes and
    an undefined reference stays as written (kubernetes third_party/forked/golang/expansion/expand.go)."""
    return re.sub(
        r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
        lambda m: "$" if m.group(0) == "$$" else defined.get(m.group(1), m.group(0)),
        value,
    )


def container_env(jobset: dict[str, Any]) -> dict[str, str]:
    """The container's environment as the kubelet builds it for a pod of this JobSet."""
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    labels = {**pod["metadata"].get("labels", {}), JOBSET_NAME_LABEL: jobset["metadata"]["name"]}
    defined: dict[str, str] = {}
    for entry in pod["spec"]["containers"][0]["env"]:
        if "value" in entry:
            defined[entry["name"]] = expand(entry["value"], defined)
            continue
        path = entry["valueFrom"]["fieldRef"]["fieldPath"]
        label = re.fullmatch(r"metadata\.labels\['(.+)'\]", path)
        defined[entry["name"]] = labels[label.group(1)] if label else f"<{path}>"
    return defined


def test_the_checkpoint_directory_follows_the_jobs_name() -> None:
    jobset = the_jobset()
    renamed = {**jobset, "metadata": {**jobset["metadata"], "name": "train-from-scratch"}}
    first, again, fresh = (container_env(j)["CHECKPOINT_DIR"] for j in (jobset, the_jobset(), renamed))
    assert "$(" not in first, f"every reference in CHECKPOINT_DIR resolves in the pod: {first}"
    assert first == again, "resubmitting under the same name finds the same checkpoints and resumes"
    assert fresh != first and fresh.endswith("/train-from-scratch"), (
        "the page says a new name starts from scratch: a new name must give a new checkpoint directory"
    )
