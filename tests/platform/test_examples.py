"""The scenario examples: real Pulumi projects that install as documented and build what they promise.

Each example's program runs under Pulumi mocks with its own stack file, under its own project name
(it reads the `aks-gpu-platform:*` keys whatever the project is called), through
`aks_gpu_platform.testing` as a consumer's own tests evaluate theirs. test_packaging.py installs one
example with the command its README documents and runs its program from there.
"""

from __future__ import annotations

import json
import re
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from aks_gpu_platform.config import ConfigError, PlatformConfig, load_platform_config
from aks_gpu_platform.config.placeholders import find_placeholders, refuse_placeholders
from aks_gpu_platform.config.training.section import gpus_per_node
from aks_gpu_platform.testing import (
    RecordedResource,
    Recording,
    evaluate_stack_file,
    kubernetes_object,
    policy_verdicts,
    read_stack_yaml,
)
from tools import REPO_ROOT, config_reference

EXAMPLES = REPO_ROOT / "examples"
PLATFORM_PREFIX = "aks-gpu-platform:"
# The examples whose stack file configures a whole platform; training-job runs on one instead.
PLATFORM_EXAMPLES = ("minimal-dev", "hub-spoke-private", "infiniband-training")
INSTALL = "python -m venv venv && venv/bin/pip install -r requirements.txt"
INSTALLED_EXAMPLE = "minimal-dev"

CLUSTER = "azure-native:containerservice:ManagedCluster"
AGENT_POOL = "azure-native:containerservice:AgentPool"
GPU_NODE_POOL = "aks-gpu-platform:index:GpuNodePool"
AML_FILESYSTEM = "azure-native:storagecache:AmlFilesystem"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"


def example_dirs() -> list[Path]:
    return sorted(p.parent for p in EXAMPLES.glob("*/Pulumi.yaml"))


def project(example: Path) -> dict[str, Any]:
    return yaml.safe_load((example / "Pulumi.yaml").read_text())


def stack_file(example: Path) -> Path:
    (found,) = sorted(example.glob("Pulumi.*.yaml"))
    return found


def platform_settings(example: Path) -> dict[str, Any]:
    config = read_stack_yaml(stack_file(example))
    return {k.removeprefix(PLATFORM_PREFIX): v for k, v in config.items() if k.startswith(PLATFORM_PREFIX)}


def platform_config(name: str) -> PlatformConfig:
    return load_platform_config(platform_settings(EXAMPLES / name))


def run_example(example: Path, stack_references: dict[str, dict[str, Any]] | None = None) -> Recording:
    """The example's `__main__.py` with its own stack file, as `pulumi up` in its folder would run it."""
    return evaluate_stack_file(stack_file(example), stack_references=stack_references)


@cache
def recording(name: str) -> Recording:
    return run_example(EXAMPLES / name)


def gpu_agent_pools(rec: Recording) -> list[RecordedResource]:
    pools = [r for r in rec.of_type(AGENT_POOL) if rec.by_urn(r.parent).type == GPU_NODE_POOL]
    return pools


def documented_install(example: Path) -> list[str]:
    """The shell lines of the README's `## Install and run` block."""
    readme = (example / "README.md").read_text()
    section = readme.split("## Install and run", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None, f"{example.name}/README.md shows its install commands in a shell block"
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines()]


def test_the_scenarios_are_all_there() -> None:
    names = [p.name for p in example_dirs()]
    assert set(PLATFORM_EXAMPLES) | {"training-job"} == set(names), (
        f"the scenarios of the examples index (examples/README.md) are the projects under examples/: {names}"
    )
    with_platform_keys = {p.name for p in example_dirs() if platform_settings(p)}
    assert with_platform_keys == set(PLATFORM_EXAMPLES), "the platform examples configure the platform themselves"


@pytest.mark.parametrize("example", example_dirs(), ids=lambda p: p.name)
def test_each_example_is_a_pulumi_project_with_its_own_virtualenv(example: Path) -> None:
    card = project(example)
    runtime = card["runtime"]
    assert runtime["name"] == "python", "a Python Pulumi program"
    assert runtime["options"]["virtualenv"] == "venv", "Pulumi runs the program in the example's own venv/"
    assert runtime["options"].get("toolchain", "pip") == "pip", "the venv is built with pip from requirements.txt"
    for needed in ("__main__.py", "requirements.txt", "README.md"):
        assert (example / needed).is_file(), f"{example.name} has its {needed}"
    own_keys = {k for k in read_stack_yaml(stack_file(example)) if k.startswith(f"{card['name']}:")}
    declared = card.get("config") or {}
    assert own_keys <= set(declared), f"{example.name}: the CLI types and documents the project's own keys"
    required = {k for k, v in declared.items() if "default" not in v}
    assert required <= own_keys, f"{example.name}: the Pulumi CLI refuses a stack without {required - own_keys}"


@pytest.mark.parametrize("example", example_dirs(), ids=lambda p: p.name)
def test_each_readme_documents_the_install_from_the_example_folder(example: Path) -> None:
    lines = documented_install(example)
    assert f"cd examples/{example.name}" in lines, "pip resolves the path `../..` from the folder it runs in"
    assert INSTALL in lines, f"{example.name}/README.md documents `{INSTALL}`"
    assert lines.index(INSTALL) > lines.index(f"cd examples/{example.name}"), "the install runs in the folder"


@pytest.mark.parametrize("example", example_dirs(), ids=lambda p: p.name)
def test_requirements_name_this_checkout_in_a_form_pip_accepts(example: Path) -> None:
    """pip reads `-r` relative to the requirements file and a bare path relative to the working
    directory, and rejects a relative `file:` URL (`aks-gpu-platform @ file:../..`) outright."""
    lines = [line.strip() for line in (example / "requirements.txt").read_text().splitlines()]
    entries = [line for line in lines if line and not line.startswith("#")]
    assert entries, f"{example.name}/requirements.txt installs something"
    projects: list[str] = []
    for entry in entries:
        if entry.startswith("-r "):
            included = example / entry.removeprefix("-r ").strip()
            assert included.is_file(), f"{entry}: pip reads it relative to {example.name}/requirements.txt"
            continue
        assert " @ file:" not in entry or entry.split(" @ file:", 1)[1].startswith("///"), (
            f"{entry}: pip rejects a relative file: URL"
        )
        if entry.startswith((".", "/")):
            pyproject = example / entry / "pyproject.toml"
            assert pyproject.is_file(), f"{entry}: from the example's folder it names the repository"
            projects.append(tomllib.loads(pyproject.read_text())["project"]["name"])
    assert projects == ["aks-gpu-platform"], "the example installs this checkout's aks-gpu-platform"


@pytest.mark.parametrize("name", PLATFORM_EXAMPLES)
def test_platform_stack_files_match_the_schema_editors_validate_against(name: str) -> None:
    path = stack_file(EXAMPLES / name)
    first = path.read_text().splitlines()[0]
    match = re.fullmatch(r"# yaml-language-server: \$schema=(\S+)", first)
    assert match, f"{name}: the stack file names the schema, so editors check it as it is edited"
    schema_path = (path.parent / match[1]).resolve()
    assert schema_path == config_reference.SCHEMA, "the modeline points at the project's schema"
    schema = json.loads(schema_path.read_text())
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    problems = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(yaml.safe_load(path.read_text()))
    ]
    assert not problems, f"{name}: the editor would flag {problems}"


@pytest.mark.parametrize("name", PLATFORM_EXAMPLES)
def test_platform_stack_files_validate_and_a_real_run_refuses_their_placeholders(name: str) -> None:
    cfg = platform_config(name)
    placeholders = [p for p in find_placeholders(cfg) if p.deployed]
    assert placeholders, f"{name} ships stand-ins for tenant-specific values"
    with pytest.raises(ConfigError) as refused:
        refuse_placeholders(cfg)
    for placeholder in placeholders:
        assert placeholder.path in str(refused.value), f"a real run names {placeholder.path} to replace"


def test_minimal_dev_builds_one_t4_pool_and_no_lustre() -> None:
    rec = recording("minimal-dev")
    (pool,) = gpu_agent_pools(rec)
    assert pool.inputs["vmSize"] == "Standard_NC4as_T4_v3", "the one GPU pool is a T4 pool"
    assert pool.inputs["minCount"] == 0, "it scales from zero: no GPU bill while idle"
    assert not rec.of_type(AML_FILESYSTEM), "no Lustre filesystem (the smallest is billed at 4 TiB)"
    charts = {r.inputs.get("chart") for r in rec.of_type(HELM_RELEASE)}
    assert "azurelustre-csi-driver" not in str(charts), "and no Lustre CSI driver"
    assert rec.stack_outputs["kubeconfig"], "the five-line program exports the kubeconfig"
    assert "kubeconfig" in rec.secret_outputs, "as a secret: it grants access to the cluster"


def test_hub_spoke_private_joins_the_spoke_with_a_private_api_server() -> None:
    rec = recording("hub-spoke-private")
    subnets = platform_settings(EXAMPLES / "hub-spoke-private")["network"]["existingSubnets"]
    cluster = rec.one(CLUSTER)
    access = cluster.inputs["apiServerAccessProfile"]
    assert access["enablePrivateCluster"] is True, "the API server has no public endpoint"
    assert not access.get("authorizedIpRanges"), "a private API server takes no public ranges"
    assert not rec.of_type("azure-native:network:VirtualNetwork"), "the spoke's VNet is used, not a new one"
    assert not rec.of_type("azure-native:network:Subnet"), "and its subnets"
    pools = [cluster.inputs["agentPoolProfiles"][0], *(p.inputs for p in rec.of_type(AGENT_POOL))]
    assert len(pools) == 3, "system, CPU and GPU pool"
    assert all(p["vnetSubnetID"] == subnets["nodesSubnetId"] for p in pools), "every pool joins the spoke's subnet"
    joiner = [
        r
        for r in rec.of_type("azure-native:authorization:RoleAssignment")
        if r.inputs["scope"] == subnets["nodesSubnetId"]
    ]
    assert len(joiner) == 1, "the cluster identity is granted the node subnet it joins (Network Contributor)"
    (endpoint,) = rec.of_type("azure-native:network:PrivateEndpoint")
    assert endpoint.inputs["subnet"]["id"] == subnets["privateEndpointsSubnetId"], "the registry's endpoint sits in it"
    (link,) = rec.of_type("azure-native:privatedns:VirtualNetworkLink")
    assert link.inputs["virtualNetwork"]["id"] == subnets["vnetId"], "and its DNS zone resolves in the spoke"


def test_hub_spoke_private_placeholders_cover_every_spoke_id() -> None:
    refused = {p.path for p in find_placeholders(platform_config("hub-spoke-private")) if p.deployed}
    subnets = platform_settings(EXAMPLES / "hub-spoke-private")["network"]["existingSubnets"]
    ids = {f"network.existingSubnets.{k}" for k in subnets if k.endswith("Id")}
    assert ids, "the stack file names the spoke's VNet and subnets by ID"
    assert ids <= refused, f"a real run refuses every stand-in spoke ID until replaced; not refused: {ids - refused}"


def test_hub_spoke_private_scales_its_own_deployment_on_the_platform_cluster() -> None:
    rec = recording("hub-spoke-private")
    own = read_stack_yaml(stack_file(EXAMPLES / "hub-spoke-private"))
    namespace, deployment = own["hub-spoke-private:servingNamespace"], own["hub-spoke-private:servingDeployment"]
    scaling = rec.one("aks-gpu-platform:index:GpuAutoscaling")
    assert not scaling.parent.endswith("AksGpuPlatform::gpu"), "the project's own component, not the platform's"
    scaled = kubernetes_object(rec.one("kubernetes:keda.sh/v1alpha1:ScaledObject"))
    assert scaled["metadata"]["namespace"] == namespace, "the ScaledObject sits beside the Deployment"
    assert scaled["spec"]["scaleTargetRef"]["name"] == deployment, "and scales the configured Deployment"

    (provider,) = rec.of_type("pulumi:providers:kubernetes")
    keda_objects = [r for r in rec.resources if r.type.startswith("kubernetes:keda.sh/")]
    assert len(keda_objects) == 2, "a TriggerAuthentication and a ScaledObject"
    assert all(r.provider.startswith(provider.urn + "::") for r in keda_objects), (
        "the KEDA objects go to the platform's cluster through its provider (platform.handle)"
    )
    cluster = rec.one(CLUSTER)
    credential = rec.one("azure-native:managedidentity:FederatedIdentityCredential")
    assert credential.inputs["issuer"] == cluster.outputs["oidcIssuerProfile"]["issuerURL"], (
        "KEDA's identity trusts the platform cluster's OIDC issuer"
    )
    workspace = rec.one("azure-native:monitor:AzureMonitorWorkspace")
    trigger = scaled["spec"]["triggers"][0]["metadata"]
    assert trigger["serverAddress"] == workspace.outputs["metrics"]["prometheusQueryEndpoint"], (
        "the trigger queries the platform's Azure Monitor workspace"
    )
    identity = next(r for r in rec.of_type("azure-native:managedidentity:UserAssignedIdentity") if "scale" in r.name)
    assert identity.inputs["resourceGroupName"] == rec.one("azure-native:resources:ResourceGroup").outputs["name"], (
        "the identity lives in the platform's resource group"
    )
    readers = [
        r
        for r in rec.of_type("azure-native:authorization:RoleAssignment")
        if r.inputs["scope"] == workspace.outputs["id"]
    ]
    assert readers, "the identity may read the workspace's metrics"


def test_infiniband_training_builds_one_fabric_with_lustre_and_a_team_queue() -> None:
    rec = recording("infiniband-training")
    cfg = platform_config("infiniband-training")
    (pool_cfg,) = cfg.gpu_pools
    (pool,) = gpu_agent_pools(rec)
    assert pool_cfg.infiniband and pool_cfg.sku.infiniband, "an InfiniBand H100 pool"
    assert len(pool.inputs["availabilityZones"]) == 1, "one pool is one IB fabric: exactly one zone"
    filesystem = rec.one(AML_FILESYSTEM)
    assert filesystem.inputs["zones"] == pool.inputs["availabilityZones"], "Lustre sits in the GPU nodes' zone"
    assert filesystem.outputs["throughputProvisionedMBps"] >= 8000, "8 GB/s for 32 H100s, as the stack file says"
    assert filesystem.protect, "prod protects the filesystem: it cannot be resized, only replaced"
    charts = [r.inputs.get("chart") for r in rec.of_type(HELM_RELEASE)]
    assert "network-operator" in charts, "NVIDIA's Network Operator serves RDMA on the IB nodes"
    assert rec.of_type("kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"), "through its NicClusterPolicy"
    queue = kubernetes_object(rec.one("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"))
    (flavor,) = [f for f in queue["spec"]["resourceGroups"][0]["flavors"] if f["name"] != cfg.cpu_pool.name]
    gpus = next(r["nominalQuota"] for r in flavor["resources"] if r["name"] == "nvidia.com/gpu")
    assert int(gpus) == pool_cfg.max_count * gpus_per_node(pool_cfg), "the team's quota is the whole pool"
    team = rec.stack_outputs["trainingTeams"]["llm"]
    assert team["lustrePvcName"], "the team's namespace gets a claim on the filesystem"


def test_training_job_runs_on_the_infiniband_training_platform() -> None:
    example = EXAMPLES / "training-job"
    own = read_stack_yaml(stack_file(example))
    platform_stack = own["training-job:platformStack"]
    assert platform_stack.split("/")[1] == project(EXAMPLES / "infiniband-training")["name"], (
        "its stack file names the infiniband-training project"
    )
    outputs = recording("infiniband-training").stack_outputs
    rec = run_example(example, stack_references={platform_stack: outputs})
    team = outputs["trainingTeams"][own["training-job:team"]]
    jobset = kubernetes_object(rec.one(JOBSET))
    declared = project(example)["config"]
    assert jobset["metadata"]["name"] == declared["training-job:jobName"]["default"], "Pulumi.yaml's defaults apply"
    assert jobset["spec"]["failurePolicy"]["maxRestarts"] == declared["training-job:maxRestarts"]["default"]
    assert jobset["metadata"]["namespace"] == team["namespace"], "submitted in the team's namespace"
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == team["localQueue"], "through its queue"
    (replicated,) = jobset["spec"]["replicatedJobs"]
    pod = replicated["template"]["spec"]["template"]["spec"]
    claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if "persistentVolumeClaim" in v]
    assert claims == [team["lustrePvcName"]], "mounting the team's Lustre claim"
    requested = int(pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"])
    (pool,) = platform_config("infiniband-training").gpu_pools
    assert requested <= gpus_per_node(pool), "a pod fits one node of the team's pool"
    nodes = replicated["template"]["spec"]["parallelism"]
    assert nodes * requested <= pool.max_count * gpus_per_node(pool), "all ranks fit the team's quota at once"


@pytest.mark.parametrize("name", PLATFORM_EXAMPLES)
def test_platform_examples_pass_the_policy_pack(name: str) -> None:
    verdicts = policy_verdicts(recording(name), platform_config(name).environment)
    assert verdicts, "the policy pack has rules"
    failed = {p.name: [v.message for v in found] for p, found in verdicts if p.mandatory and found}
    assert not failed, f"{name} breaks mandatory policies `pulumi preview --policy-pack policy` would enforce: {failed}"


def test_the_testing_page_example_passes_in_the_minimal_dev_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    page = (REPO_ROOT / "docs" / "testing.md").read_text()
    (snippet,) = [block.split("```", 1)[0] for block in page.split("```python\n")[1:]]
    monkeypatch.chdir(EXAMPLES / "minimal-dev")  # where the page says the test file sits
    scope: dict[str, Any] = {}
    exec(snippet, scope)
    tests = [f for name, f in scope.items() if name.startswith("test_")]
    assert tests, "the page shows a test a consumer can copy"
    for test in tests:
        test()  # its assertions are the page's promises about the example's stack
