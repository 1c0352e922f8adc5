"""`aks-gpu-platform check`: a researcher's Job, JobSet, Pod or Deployment against the stack's cluster, offline.

The shipped manifests pass on the stacks they name; a manifest that breaks one rule fails that check, with a reason
that says what to change; and each verdict agrees with the test-side models of the upstream systems (admission CEL,
Pod Security, Kueue's quota, the scheduler's node filters, the autoscaler's template), which the product never
imports.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Callable, Mapping
from contextlib import redirect_stderr, redirect_stdout
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from aks_gpu_platform.config.gpu.scheduling import selects_node, tolerates_taints
from aks_gpu_platform.plan import check, manifests
from aks_gpu_platform.plan.cli import main as cli_main
from aks_gpu_platform.plan.cluster_view import stack_view
from aks_gpu_platform.testing import Recording, kubernetes_object
from tests.upstream import admission_cel, autoscaler_template, kube_scheduler, pod_security_standard, scheduling
from tests.upstream.kube_scheduler import pod_fits_node
from tools import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"
DEV_MANIFESTS = (
    EXAMPLES / "team-jobset" / "jobset.yaml",
    EXAMPLES / "team-jobset" / "copy-data-dev.yaml",
    EXAMPLES / "llm-serving" / "chat-job.yaml",
)
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GPU = "nvidia.com/gpu"


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def the_jobset() -> dict[str, Any]:
    (jobset,) = [d for d in documents(DEV_MANIFESTS[0]) if d["kind"] == "JobSet"]
    return copy.deepcopy(jobset)


def the_cpu_job() -> dict[str, Any]:
    (job,) = documents(DEV_MANIFESTS[2])
    return copy.deepcopy(job)


def rank_spec(jobset: dict[str, Any]) -> dict[str, Any]:
    return jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


def verdicts_of(obj: Mapping[str, Any], recording: Recording) -> dict[str, check.Verdict]:
    return {v.check: v for v in check.check_manifests([manifests.workload(obj)], recording)}


def failed(verdicts: Mapping[str, check.Verdict]) -> set[str]:
    return {name for name, v in verdicts.items() if not v.passed}


# ---------------------------------------------------------------- one broken rule each


def sidecar_without_void() -> dict[str, Any]:
    """A log shipper beside the GPU trainer, asking for no GPU and not setting NVIDIA_VISIBLE_DEVICES=void."""
    jobset = the_jobset()
    rank_spec(jobset)["containers"].append(
        {
            "name": "log-shipper",
            "image": "busybox:1.37",
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}},
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        }
    )
    return jobset


def sidecar_with_void() -> dict[str, Any]:
    jobset = sidecar_without_void()
    rank_spec(jobset)["containers"][-1]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]
    return jobset


def no_queue_label() -> dict[str, Any]:
    job = the_cpu_job()
    del job["metadata"]["labels"][QUEUE_LABEL]
    return job


def ranks(count: int) -> dict[str, Any]:
    jobset = the_jobset()
    job = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    job["completions"] = job["parallelism"] = count
    return jobset


def too_big_for_any_node() -> dict[str, Any]:
    """One rank asking for more memory than a T4 VM has (28 GiB), well within the team's 56Gi of GPU-flavor quota."""
    jobset = ranks(1)
    for bound in ("requests", "limits"):
        rank_spec(jobset)["containers"][0]["resources"][bound]["memory"] = "30Gi"
    return jobset


def deployment(namespace: str, container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "notebook", "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "notebook"}},
            "template": {
                "metadata": {"labels": {"app": "notebook"}},
                "spec": {"containers": [{"name": "main", "image": "python:3.13", **container}], **spec},
            },
        },
    }


SMALL = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "500m", "memory": "1Gi"}}


def privileged_container() -> dict[str, Any]:
    """In `models` (Pod Security baseline, no admission policy bound): only Pod Security refuses it."""
    return deployment("models", {"resources": SMALL, "securityContext": {"privileged": True}})


def gpu_without_toleration() -> dict[str, Any]:
    """A GPU Deployment outside the queue that forgot the GPU pools' taint: no pool fits."""
    resources = {"requests": {**SMALL["requests"], GPU: "1"}, "limits": {**SMALL["limits"], GPU: "1"}}
    return deployment("models", {"resources": resources})


def gpu_with_toleration() -> dict[str, Any]:
    manifest = gpu_without_toleration()
    manifest["spec"]["template"]["spec"]["tolerations"] = [
        {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    ]
    return manifest


BROKEN: dict[str, tuple[Callable[[], dict[str, Any]], str, str]] = {
    # name: (manifest, the one check that fails, what its reason must say)
    "sidecar-without-void": (sidecar_without_void, "admission", "NVIDIA_VISIBLE_DEVICES=void"),
    "no-queue-label": (no_queue_label, "queue", f"add `{QUEUE_LABEL}: ml`"),
    "over-quota": (lambda: ranks(3), "queue", "3 nvidia.com/gpu (quota 2)"),
    "too-big-for-any-node": (too_big_for_any_node, "node-fit", "memory"),
    "privileged": (privileged_container, "pod-security", "privileged: containers main"),
    "gpu-without-toleration": (gpu_without_toleration, "node-fit", "taint sku=gpu:NoSchedule not tolerated"),
}
FIXED: dict[str, Callable[[], dict[str, Any]]] = {
    "sidecar-with-void": sidecar_with_void,
    "two-ranks": lambda: ranks(2),
    "gpu-with-toleration": gpu_with_toleration,
}


def test_the_shipped_team_manifests_pass_every_check_on_the_dev_stack(dev_recording: Recording) -> None:
    workloads = manifests.read_manifests(DEV_MANIFESTS)
    assert {w.kind for w in workloads} == {"Job", "JobSet"}, "the PVC beside the JobSet is skipped, not refused"
    verdicts = check.check_manifests(workloads, dev_recording)
    assert len(verdicts) == 3 * len(check.CHECKS)
    assert all(v.passed for v in verdicts), "\n".join(v.line() for v in verdicts if not v.passed)


def test_verdicts_name_pools_as_the_config_does_and_policies_in_a_stable_order(dev_recording: Recording) -> None:
    """A researcher reads `gput4` in the docs and the plan; the Azure agent pool's hashed name is nobody's word."""
    verdicts = check.check_manifests(manifests.read_manifests(DEV_MANIFESTS), dev_recording)
    text = "\n".join(v.line() for v in verdicts)
    azure = [p.name for p in stack_view(dev_recording).pools if p.name != p.config_name]
    assert azure and not [name for name in azure if name in text], f"Azure pool names {azure} in:\n{text}"
    assert "gput4 (Standard_NC4as_T4_v3)" in text, text
    for v in verdicts:
        if v.check == "admission" and v.reason.startswith("admitted by "):
            names = v.reason.removeprefix("admitted by ").split(", ")
            assert names == sorted(names), f"the same manifest lists its policies in one order: {names}"


def test_the_prod_copy_data_job_passes_every_check_on_the_prod_stack(prod_recording: Recording) -> None:
    workloads = manifests.read_manifests([EXAMPLES / "team-jobset" / "copy-data-prod.yaml"])
    verdicts = check.check_manifests(workloads, prod_recording)
    assert verdicts and all(v.passed for v in verdicts), "\n".join(v.line() for v in verdicts if not v.passed)


def test_the_training_job_examples_jobset_passes_every_check_on_the_infiniband_prod_stack(
    prod_recording: Recording,
) -> None:
    from tests.training.test_example_training_job import KUBECONFIG, run_example

    outputs = {"kubeconfig": KUBECONFIG, "trainingTeams": prod_recording.stack_outputs["trainingTeams"]}
    example = run_example(outputs)
    (jobset,) = [kubernetes_object(r) for r in example.kubernetes_objects() if r.type.endswith(":JobSet")]
    verdicts = verdicts_of(jobset, prod_recording)
    assert not failed(verdicts), "\n".join(v.line() for v in verdicts.values())
    assert "h100" in verdicts["node-fit"].reason, "8-GPU ranks land on an H100 pool"


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_manifest_that_breaks_one_rule_fails_that_check_with_its_reason(name: str, dev_recording: Recording) -> None:
    build, check_name, reason = BROKEN[name]
    verdicts = verdicts_of(build(), dev_recording)
    # The autoscaler brings up no node for a pod no node fits: scale-from-zero fails with node-fit, and says so.
    follows = {"scale-from-zero"} if check_name == "node-fit" else set()
    assert failed(verdicts) == {check_name, *follows}, [v.line() for v in verdicts.values()]
    assert reason in verdicts[check_name].reason, verdicts[check_name].line()
    assert all("see node-fit" in verdicts[f].reason for f in follows)


@pytest.mark.parametrize("name", sorted(FIXED))
def test_the_same_manifest_with_the_rule_met_passes(name: str, dev_recording: Recording) -> None:
    verdicts = verdicts_of(FIXED[name](), dev_recording)
    assert not failed(verdicts), [v.line() for v in verdicts.values() if not v.passed]


def test_one_gpu_over_the_quota_fails_and_the_quota_itself_fits(dev_recording: Recording) -> None:
    """The dev team's GPU flavor holds 2 GPUs: 2 ranks x 1 GPU is admitted, 3 are not."""
    assert verdicts_of(ranks(2), dev_recording)["queue"].passed
    assert not verdicts_of(ranks(3), dev_recording)["queue"].passed


def test_a_queue_label_naming_no_local_queue_fails_and_lists_the_namespaces_queues(dev_recording: Recording) -> None:
    job = the_cpu_job()
    job["metadata"]["labels"][QUEUE_LABEL] = "vision"
    verdict = verdicts_of(job, dev_recording)["queue"]
    assert not verdict.passed and "names no LocalQueue" in verdict.reason and "ml" in verdict.reason


def test_a_pod_selecting_a_label_only_real_nodes_carry_cannot_scale_its_pool_from_zero(
    dev_recording: Recording,
) -> None:
    """AKS labels a T4 node kubernetes.azure.com/accelerator=nvidia at boot, but the autoscaler's template of a pool
    at zero has only the pool's nodeLabels: a pod selecting the label fits a node and never brings one up."""
    manifest = gpu_with_toleration()
    manifest["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.azure.com/accelerator": "nvidia"}
    verdicts = verdicts_of(manifest, dev_recording)
    assert failed(verdicts) == {"scale-from-zero"}, [v.line() for v in verdicts.values()]
    assert "template" in verdicts["scale-from-zero"].reason


# ---------------------------------------------------------------- the product agrees with the upstream models


def model_pods(obj: Mapping[str, Any]) -> list[tuple[dict[str, Any], int]]:
    """Each pod template of the object with how many pods it makes, read as the models read them."""
    kind = obj["kind"]
    if kind == "Pod":
        return [(dict(obj), 1)]
    if kind == "Deployment":
        return [(obj["spec"]["template"], obj["spec"].get("replicas", 1))]
    if kind == "Job":
        spec = obj["spec"]
        return [
            (spec["template"], min(spec.get("parallelism", 1), spec.get("completions", spec.get("parallelism", 1))))
        ]
    found: list[tuple[dict[str, Any], int]] = []
    for replicated in obj["spec"]["replicatedJobs"]:
        job = replicated["template"]["spec"]
        count = min(job.get("parallelism", 1), job.get("completions", job.get("parallelism", 1)))
        found.append((job["template"], replicated.get("replicas", 1) * count))
    return found


def objects(recording: Recording, kind: str) -> list[dict[str, Any]]:
    return [o for o in map(kubernetes_object, recording.kubernetes_objects()) if o.get("kind") == kind]


def namespace_labels(recording: Recording, namespace: str) -> dict[str, str]:
    (ns,) = [n for n in objects(recording, "Namespace") if n["metadata"]["name"] == namespace]
    return {"kubernetes.io/metadata.name": namespace, **(ns["metadata"].get("labels") or {})}


def binding_selects(binding: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A binding's namespaceSelector: matchLabels, and the Exists/DoesNotExist expressions the stacks use."""
    selector = (binding["spec"].get("matchResources") or {}).get("namespaceSelector") or {}
    expressions = selector.get("matchExpressions") or []
    assert all(e["operator"] in ("Exists", "DoesNotExist") for e in expressions), "only these are modelled"
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items()) and all(
        (e["key"] in labels) == (e["operator"] == "Exists") for e in expressions
    )


def policy_matches(policy: Mapping[str, Any], obj: dict[str, Any], labels: Mapping[str, str]) -> bool:
    if obj["kind"] != "Pod":
        return admission_cel.policy_applies(dict(policy), {"spec": {}}, obj, "CREATE", dict(labels))
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    return any("pods" in r["resources"] and "CREATE" in r["operations"] for r in rules)


def model_admits(obj: Mapping[str, Any], recording: Recording) -> bool:
    """Every policy a Deny binding enforces in the namespace holds on the object and on the pods it makes."""
    labels = namespace_labels(recording, obj["metadata"]["namespace"])
    policies = {p["metadata"]["name"]: p for p in objects(recording, "ValidatingAdmissionPolicy")}
    candidates = [dict(obj)] if obj["kind"] in ("Pod", "Job", "JobSet") else []
    if obj["kind"] != "Pod":
        candidates += [{"apiVersion": "v1", "kind": "Pod", **template} for template, _ in model_pods(obj)]
    for binding in objects(recording, "ValidatingAdmissionPolicyBinding"):
        policy = policies[binding["spec"]["policyName"]]
        if "Deny" not in binding["spec"]["validationActions"] or not binding_selects(binding, labels):
            continue
        for candidate in candidates:
            if policy_matches(policy, candidate, labels) and admission_cel.verdict(policy, candidate) is not None:
                return False
    return True


def model_pod_security(obj: Mapping[str, Any], recording: Recording) -> bool:
    level = pod_security_standard.enforced_level(namespace_labels(recording, obj["metadata"]["namespace"]))
    return all(not pod_security_standard.violations(level, t["spec"]) for t, _ in model_pods(obj))


def model_quota(obj: Mapping[str, Any], recording: Recording) -> bool:
    """The queue label names a LocalQueue, and each pod set's total requests fit a flavor's nominal quota that
    its nodeSelector agrees with (every manifest here has one pod set)."""
    if obj["kind"] not in ("Job", "JobSet"):
        return True  # the platform's Kueue manages batch/job and jobset only (its Configuration's frameworks)
    queue = (obj["metadata"].get("labels") or {}).get(QUEUE_LABEL)
    namespace = obj["metadata"]["namespace"]
    local = [q for q in objects(recording, "LocalQueue") if q["metadata"]["namespace"] == namespace]
    if queue is None:
        return not local
    (named,) = [q for q in local if q["metadata"]["name"] == queue] or [None]
    if named is None:
        return False
    (cluster_queue,) = [
        q for q in objects(recording, "ClusterQueue") if q["metadata"]["name"] == named["spec"]["clusterQueue"]
    ]
    flavors = {f["metadata"]["name"]: f["spec"] for f in objects(recording, "ResourceFlavor")}
    ((template, count),) = model_pods(obj)
    total = {k: v * count for k, v in scheduling.pod_requests(template["spec"]).items()}
    selector = template["spec"].get("nodeSelector") or {}
    for group in cluster_queue["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            labels = flavors[flavor["name"]].get("nodeLabels") or {}
            if any(labels.get(k, v) != v for k, v in selector.items()):
                continue
            quota = {r["name"]: scheduling.parse_quantity(r["nominalQuota"]) for r in flavor["resources"]}
            if all(total.get(r, Fraction(0)) <= quota.get(r, Fraction(0)) for r in group["coveredResources"]):
                return True
    return False


def model_fits_a_node(spec: Mapping[str, Any], recording: Recording) -> bool:
    """Some pool's node (scheduling.node_template's labels and taints) selects and tolerates the pod, and the
    size's capacity (the autoscaler's SKU excerpt) covers its requests."""
    pools = [p.inputs for p in recording.of_type(scheduling.AGENT_POOL)]
    for pool in pools:
        node = scheduling.node_template(pool)
        capacity = autoscaler_template.template_node(pool).allocatable
        if pod_fits_node(spec, node.labels, node.taints) and not scheduling.unmet_requests(spec, capacity):
            return True
    return False


def flavored(spec: Mapping[str, Any], obj: Mapping[str, Any], recording: Recording) -> list[dict[str, Any]]:
    """The pod spec as it runs: as written outside the queue, else with each flavor's labels and tolerations."""
    if not (obj["metadata"].get("labels") or {}).get(QUEUE_LABEL):
        return [dict(spec)]
    return [
        {
            **spec,
            "nodeSelector": {**(spec.get("nodeSelector") or {}), **(f["spec"].get("nodeLabels") or {})},
            "tolerations": [*(spec.get("tolerations") or []), *(f["spec"].get("tolerations") or [])],
        }
        for f in objects(recording, "ResourceFlavor")
    ]


def model_node_fit(obj: Mapping[str, Any], recording: Recording) -> bool:
    return all(
        any(model_fits_a_node(s, recording) for s in flavored(t["spec"], obj, recording)) for t, _ in model_pods(obj)
    )


def model_scale_from_zero(obj: Mapping[str, Any], recording: Recording) -> bool:
    kept = [
        p.inputs for p in recording.of_type(scheduling.AGENT_POOL) if not autoscaler_template.can_be_at_zero(p.inputs)
    ]
    zero = autoscaler_template.zero_node_templates(recording)

    def grows(spec: Mapping[str, Any]) -> bool:
        for pool in kept:
            node = scheduling.node_template(pool)
            capacity = autoscaler_template.template_node(pool).allocatable
            if pod_fits_node(spec, node.labels, node.taints) and not scheduling.unmet_requests(spec, capacity):
                return True
        return any(not autoscaler_template.why_not_template(dict(spec), node) for node in zero)

    return all(any(grows(s) for s in flavored(t["spec"], obj, recording)) for t, _ in model_pods(obj))


MODELS: dict[str, Callable[[Mapping[str, Any], Recording], bool]] = {
    "admission": model_admits,
    "pod-security": model_pod_security,
    "queue": model_quota,
    "node-fit": model_node_fit,
    "scale-from-zero": model_scale_from_zero,
}


def agreement_cases() -> list[tuple[str, Callable[[], dict[str, Any]]]]:
    shipped = [
        (f"{path.parent.name}/{path.name}:{d['kind']}", lambda d=d: copy.deepcopy(d))
        for path in DEV_MANIFESTS
        for d in documents(path)
        if d["kind"] in manifests.CHECKED_KINDS
    ]
    return [*shipped, *((n, b) for n, (b, _, _) in BROKEN.items()), *FIXED.items()]


@pytest.mark.parametrize("name", [n for n, _ in agreement_cases()])
def test_every_verdict_agrees_with_the_upstream_models(name: str, dev_recording: Recording) -> None:
    (build,) = [b for n, b in agreement_cases() if n == name]
    manifest = build()
    verdicts = verdicts_of(manifest, dev_recording)
    expected = {check_name: model(manifest, dev_recording) for check_name, model in MODELS.items()}
    disagree = {
        n: (verdicts[n].line(), f"model: {'PASS' if ok else 'FAIL'}")
        for n, ok in expected.items()
        if verdicts[n].passed != ok
    }
    assert not disagree, disagree


# ---------------------------------------------------------------- the command


def run_command(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli_main(["check", "--project-dir", str(REPO_ROOT), *args])
    return code, out.getvalue(), err.getvalue()


def test_the_command_prints_one_line_per_check_and_exits_0_when_all_pass(dev_recording: Recording) -> None:
    code, out, _ = run_command("--stack", "dev", str(DEV_MANIFESTS[0]))
    lines = out.splitlines()
    assert code == 0, out
    assert [line.split(":")[0] for line in lines[:-1]] == [f"PASS JobSet team-ml/train {c}" for c in check.CHECKS]


def test_the_command_exits_1_on_a_failing_check(dev_recording: Recording, tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(ranks(3)))
    code, out, _ = run_command("--stack", "dev", str(manifest))
    assert code == 1 and "FAIL JobSet team-ml/train queue:" in out, out


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("kind: Job\n: [", "job.yaml"),
        (
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec: {template: {spec: {containers: []}}}\n",
            "set metadata.namespace",
        ),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "no Pod, Deployment, Job, JobSet"),
    ],
)
def test_the_command_exits_2_on_a_manifest_it_cannot_read(content: str, says: str, tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(content)
    code, out, err = run_command("--stack", "dev", str(manifest))
    assert code == 2 and says in err and not out, err


def test_the_command_exits_2_on_an_unknown_stack() -> None:
    code, _, err = run_command("--stack", "staging", str(DEV_MANIFESTS[0]))
    assert code == 2 and "Pulumi.staging.yaml" in err, err


# ---------------------------------------------------------------- Pod Security, rule by rule

RESTRICTED_POD: dict[str, Any] = {
    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [
        {
            "name": "main",
            "image": "python:3.13",
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        }
    ],
}


def restricted_pod_with(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    spec = copy.deepcopy(RESTRICTED_POD)
    change(spec)
    return spec


def container_context(spec: dict[str, Any]) -> dict[str, Any]:
    return spec["containers"][0]["securityContext"]


POD_SECURITY_CASES: dict[str, Callable[[dict[str, Any]], None]] = {
    "as written": lambda s: None,
    "hostNetwork": lambda s: s.update(hostNetwork=True),
    "hostPID": lambda s: s.update(hostPID=True),
    "hostPath volume": lambda s: s.update(volumes=[{"name": "h", "hostPath": {"path": "/"}}]),
    "host port": lambda s: s["containers"][0].update(ports=[{"containerPort": 80, "hostPort": 80}]),
    "privileged init container": lambda s: s.update(
        initContainers=[{"name": "init", "image": "busybox", "securityContext": {"privileged": True}}]
    ),
    "adds SYS_ADMIN": lambda s: container_context(s)["capabilities"].update(add=["SYS_ADMIN"]),
    "adds CHOWN": lambda s: container_context(s)["capabilities"].update(add=["CHOWN"]),
    "adds NET_BIND_SERVICE": lambda s: container_context(s)["capabilities"].update(add=["NET_BIND_SERVICE"]),
    "drops nothing": lambda s: container_context(s).pop("capabilities"),
    "may escalate": lambda s: container_context(s).pop("allowPrivilegeEscalation"),
    "no runAsNonRoot": lambda s: s["securityContext"].pop("runAsNonRoot"),
    "container runAsNonRoot false": lambda s: container_context(s).update(runAsNonRoot=False),
    "no seccomp": lambda s: s["securityContext"].pop("seccompProfile"),
    "container seccomp Localhost": lambda s: container_context(s).update(
        seccompProfile={"type": "Localhost", "localhostProfile": "p.json"}
    ),
}


@pytest.mark.parametrize("level", ["privileged", "baseline", "restricted"])
@pytest.mark.parametrize("case", sorted(POD_SECURITY_CASES))
def test_pod_security_agrees_with_the_model_rule_by_rule(level: str, case: str) -> None:
    from aks_gpu_platform.plan import pod_security

    spec = restricted_pod_with(POD_SECURITY_CASES[case])
    product = pod_security.violations(level, {}, spec)
    model = pod_security_standard.violations(level, spec)
    assert bool(product) == bool(model), (product, model)


def test_pod_security_checks_the_rules_the_model_leaves_out() -> None:
    """Baseline's AppArmor, SELinux, /proc mount and sysctl rules (pod-security-admission v0.36.2)."""
    from aks_gpu_platform.plan import pod_security

    refused = {
        "apparmor": lambda s: s["securityContext"].update(appArmorProfile={"type": "Unconfined"}),
        "selinux": lambda s: container_context(s).update(seLinuxOptions={"type": "spc_t"}),
        "proc": lambda s: container_context(s).update(procMount="Unmasked"),
        "sysctl": lambda s: s["securityContext"].update(sysctls=[{"name": "kernel.msgmax", "value": "1"}]),
    }
    for name, change in refused.items():
        assert pod_security.violations("baseline", {}, restricted_pod_with(change)), name
    safe = restricted_pod_with(
        lambda s: s["securityContext"].update(sysctls=[{"name": "net.ipv4.tcp_keepalive_time", "value": "60"}])
    )
    assert not pod_security.violations("restricted", {}, safe), "a safe sysctl is allowed"

    def unmasked_in_user_namespace(spec: dict[str, Any]) -> None:
        spec["hostUsers"] = False
        container_context(spec)["procMount"] = "Unmasked"

    in_user_namespace = restricted_pod_with(unmasked_in_user_namespace)
    assert not pod_security.violations("baseline", {}, in_user_namespace), "a user-namespace pod may unmask /proc"


# The node-fit checks' filters (config/gpu/scheduling.py) against kube-scheduler's (tests/upstream/kube_scheduler.py),
# over what the API server admits: In and NotIn with values, Exists and DoesNotExist without; a toleration without a
# key only with Exists.
KEYS = ("pool", "gpu-pool", "sku")
VALUES = ("gpu", "cpu", "")
EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")
node_labels = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES))
node_taints = st.lists(
    st.builds("{}={}:{}".format, st.sampled_from(KEYS), st.sampled_from(VALUES), st.sampled_from(EFFECTS))
)
expression = st.one_of(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(KEYS),
            "operator": st.sampled_from(("In", "NotIn")),
            "values": st.lists(st.sampled_from(VALUES), min_size=1),
        }
    ),
    st.fixed_dictionaries({"key": st.sampled_from(KEYS), "operator": st.sampled_from(("Exists", "DoesNotExist"))}),
)
toleration = st.one_of(
    st.fixed_dictionaries(
        {"key": st.sampled_from(KEYS), "operator": st.just("Equal"), "value": st.sampled_from(VALUES)},
        optional={"effect": st.sampled_from(EFFECTS)},
    ),
    st.fixed_dictionaries(
        {"key": st.sampled_from((*KEYS, "")), "operator": st.just("Exists")},
        optional={"effect": st.sampled_from(EFFECTS)},
    ),
)
pod_spec = st.fixed_dictionaries(
    {},
    optional={
        "nodeSelector": st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2),
        "affinity": st.builds(
            lambda terms: {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
            },
            st.lists(st.builds(lambda e: {"matchExpressions": e}, st.lists(expression, max_size=3)), max_size=3),
        ),
        "tolerations": st.lists(toleration, max_size=3),
    },
)


@settings(max_examples=300)
@given(pod=pod_spec, labels=node_labels, taints=node_taints)
def test_the_node_fit_filters_are_the_schedulers(
    pod: dict[str, Any], labels: dict[str, str], taints: list[str]
) -> None:
    assert selects_node(pod, labels) == kube_scheduler.selects_node(pod, labels), "NodeAffinity, as kube-scheduler"
    assert tolerates_taints(pod, taints) == kube_scheduler.tolerates_taints(pod, taints), "TaintToleration, likewise"
