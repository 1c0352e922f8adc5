"""pip installs the repository as one package, `aks_gpu_platform`, that another project builds from.

A fresh virtualenv gets the package as an example's README says (`pip install -r requirements.txt`, which
names a copy of the repository); the example's program runs from there, and a consumer project with its
own `config.py` and `components/` builds AksGpuPlatform, and separately a GpuNodePool, under mocks.
Nothing of the repository is on that interpreter's path.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aks_gpu_platform.plan.diff_command import planning_python
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.harness.fresh_install import PACKAGE, clean_environment, repository_copy, share_sdks
from tests.platform.test_examples import (
    EXAMPLES,
    GPU_NODE_POOL,
    INSTALL,
    INSTALLED_EXAMPLE,
    documented_install,
    project,
    stack_file,
)
from tools import REPO_ROOT

VERSION = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]

# A consumer stack in miniature: its own `config` and `components` sit beside it and would shadow
# generic top-level names; Azure's computed outputs the platform reads back are mocked.
CONSUMER = r"""
import base64, json, sys
import pulumi

COMPUTED = {
    "azure-native:containerservice:ManagedCluster": {
        "oidcIssuerProfile": {"enabled": True, "issuerURL": "https://issuer.example/"},
        "identityProfile": {"kubeletidentity": {"objectId": "00000000-0000-4000-8000-000000000001"}},
    },
    "azure-native:monitor:AzureMonitorWorkspace": {"metrics": {"prometheusQueryEndpoint": "https://amw.example"}},
    "azure-native:dashboard:Grafana": {
        "properties": {"endpoint": "https://grafana.example"},
        "identity": {"type": "SystemAssigned", "principalId": "00000000-0000-4000-8000-000000000002"},
    },
    "azure-native:containerregistry:Registry": {"loginServer": "acr.example"},
}


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        registered.append([args.typ, args.name])
        outputs = {**args.inputs, "name": args.inputs.get("agentPoolName", args.inputs.get("resourceName", args.name))}
        outputs.update(COMPUTED.get(args.typ, {}))
        identity = outputs.get("identity")
        if isinstance(identity, dict) and isinstance(identity.get("userAssignedIdentities"), list):
            # Azure answers with a map keyed by identity ID where the request sends a list.
            ids = identity["userAssignedIdentities"]
            outputs["identity"] = {**identity, "userAssignedIdentities": {i: {} for i in ids}}
        return f"/subscriptions/s/resourceGroups/rg/providers/mock/{args.name}", outputs

    def call(self, args):
        if args.token.endswith("listManagedClusterUserCredentials"):
            kubeconfig = base64.b64encode(b"apiVersion: v1\nkind: Config\n").decode()
            return {"kubeconfigs": [{"name": "clusterUser", "value": kubeconfig}]}, []
        ids = ("objectId", "clientId", "tenantId", "subscriptionId")
        return {key: f"00000000-0000-4000-8000-00000000000{i}" for i, key in enumerate(ids, start=3)}, []


registered = []
pulumi.runtime.set_mocks(Mocks(), project="consumer", stack="test")

import components, config  # the consumer's own
from aks_gpu_platform.components.shared.context import ClusterHandle
from aks_gpu_platform.components.gpu.node_pool import GpuNodePool
from aks_gpu_platform.components.platform import AksGpuPlatform
from aks_gpu_platform.config import load_platform_config
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
import pulumi_azure_native.containerservice as containerservice
import pulumi_kubernetes as k8s
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

pool_names = []


def platform():
    built = AksGpuPlatform("platform", load_platform_config(json.loads(sys.argv[2])))
    built.gpu_pool_names.apply(pool_names.extend)


def pool():
    cluster = containerservice.ManagedCluster("aks", resource_group_name="rg-consumer")
    handle = ClusterHandle(
        resource_group_name="rg-consumer",
        location="koreacentral",
        tags={},
        cluster=cluster,
        cluster_name=cluster.name,
        cluster_id=cluster.id,
        provider=k8s.Provider("aks-k8s", kubeconfig="{}"),
        oidc_issuer_url=pulumi.Output.from_input("https://issuer.example/"),
        protect=False,
    )
    built = GpuNodePool("gpu", {
        "cluster": handle,
        "nodes_subnet_id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/n",
        "kubernetes_version": "1.33",
        "tracks_versions": False,
        "settings": GpuPoolConfig.model_validate(
            {"name": "gpua100", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 4}
        ),
        "stack_mode": "devicePlugin",
    })
    built.pool_name.apply(pool_names.append)


_sync_await(run_pulumi_func({"platform": platform, "pool": pool}[sys.argv[1]]))
modules = {name: getattr(module, "__file__", None) for name, module in sys.modules.items()}
from aks_gpu_platform.config import __version__

print(json.dumps({
    "version": __version__,
    "registered": registered,
    "pool_names": pool_names,
    "sys_path": sys.path,
    "modules": {n: f for n, f in modules.items() if n.split(".")[0] in ("aks_gpu_platform", "config", "components")},
}))
"""


def dev_settings() -> dict[str, Any]:
    prefix = "aks-gpu-platform:"
    return {k[len(prefix) :]: v for k, v in load_stack_file("dev", REPO_ROOT).items() if k.startswith(prefix)}


def consumer_project(path: Path) -> Path:
    """A project with a `config` module and a `components` package of its own, and the stack above."""
    (path / "components").mkdir(parents=True)
    (path / "components" / "__init__.py").write_text('"""The consumer\'s own components."""\n')
    (path / "config.py").write_text('"""The consumer\'s own settings."""\nREGION = "koreacentral"\n')
    (path / "__main__.py").write_text(CONSUMER)
    return path


@dataclass(frozen=True)
class Installed:
    python: Path
    site: Path
    env: dict[str, str]
    example: Path


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """An example installed with the command its README documents, in a copy of the repository.

    The virtualenv it makes is what a consumer's project gets from `pip install`. The pinned SDKs come in
    through a .pth file (tests/harness/fresh_install.py), so nothing is downloaded again.
    """
    example = EXAMPLES / INSTALLED_EXAMPLE
    create, install = (part.strip() for part in INSTALL.split("&&"))
    checkout = repository_copy(tmp_path_factory.mktemp("installed") / "checkout", files=["requirements.txt"])
    folder = checkout / "examples" / example.name
    shutil.copytree(example, folder, ignore=shutil.ignore_patterns("venv", "__pycache__"))
    env = clean_environment()
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"  # `python`: this interpreter's Python

    created = subprocess.run(create, shell=True, cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    assert created.returncode == 0, f"`{create}` creates the virtualenv:\n{created.stderr}"
    site = share_sdks(folder / "venv" / "bin" / "python")
    result = subprocess.run(install, shell=True, cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"`{install}` installs the example in its folder:\n{result.stderr}"
    return Installed(folder / "venv" / "bin" / "python", site, env, folder)


# Evaluates an example's program in the fresh virtualenv, with the evaluation API and the platform package both
# from whatever the interpreter finds first, which must be the pip install.
RUN_INSTALLED = r"""
import json, sys
from aks_gpu_platform import testing
import aks_gpu_platform.components.platform as platform_module
rec = testing.evaluate_stack_file(sys.argv[1])
print(json.dumps({"platform_module": platform_module.__file__, "testing_module": testing.__file__,
                  "types": [r.type for r in rec.resources], "outputs": sorted(rec.stack_outputs)}))
"""


def test_an_example_installs_with_its_documented_command_in_a_fresh_virtualenv(installed: Installed) -> None:
    example = EXAMPLES / INSTALLED_EXAMPLE
    assert INSTALL in documented_install(example), "the command the fixture ran is the one the README documents"
    assert INSTALL.split("&&")[0].split()[-1] == project(example)["runtime"]["options"]["virtualenv"], (
        "it creates the virtualenv Pulumi.yaml names"
    )
    run = subprocess.run(
        [installed.python, "-c", RUN_INSTALLED, stack_file(installed.example).name],
        cwd=installed.example,
        env=installed.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, f"the installed example's program runs under mocks:\n{run.stderr}"
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(result["platform_module"]).is_relative_to(installed.site / PACKAGE), (
        "aks_gpu_platform comes from the pip install in the example's own virtualenv, not from the checkout"
    )
    assert Path(result["testing_module"]).is_relative_to(installed.site / PACKAGE), (
        "the evaluation API ships in the package: an example's tests need nothing of the repository"
    )
    assert result["types"].count("aks-gpu-platform:index:AksGpuPlatform") == 1, "the program builds the platform"
    assert result["types"].count(GPU_NODE_POOL) == 1, "with its one GPU pool"
    assert result["outputs"] == ["kubeconfig"], "and exports what the README says"


def test_a_fresh_virtualenv_installs_one_package_that_another_project_builds(
    installed: Installed, tmp_path: Path
) -> None:
    python, site, env = installed.python, installed.site, installed.env

    consumer = consumer_project(tmp_path / "consumer")
    settings = dev_settings()
    # Two separate stacks, run side by side to halve the wait.
    runs = {
        mode: subprocess.Popen(
            [python, "__main__.py", mode, json.dumps(settings)],
            cwd=consumer,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for mode in ("platform", "pool")
    }
    results: dict[str, dict[str, Any]] = {}
    for mode, run in runs.items():
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, f"the installed package must build the {mode} in another project:\n{err}"
        results[mode] = json.loads(out.strip().splitlines()[-1])

    for mode, result in results.items():
        modules = result["modules"]
        ours = {n: f for n, f in modules.items() if n.split(".")[0] == PACKAGE}
        assert f"{PACKAGE}.components.gpu.node_pool" in ours, f"{mode}: the components come from {PACKAGE}"
        assert all(Path(f).is_relative_to(site / PACKAGE) for f in ours.values() if f), (
            f"{mode}: every module of ours comes from the pip install in the fresh virtualenv, none from the repository"
        )
        assert modules["config"] == str(consumer / "config.py"), f"{mode}: `config` is the consumer's own module"
        assert modules["components"] == str(consumer / "components" / "__init__.py"), (
            f"{mode}: `components` is the consumer's own package"
        )
        assert str(REPO_ROOT) not in result["sys_path"], f"{mode}: the repository is not on the consumer's path"

    types = [t for t, _ in results["platform"]["registered"]]
    assert types.count("aks-gpu-platform:index:AksGpuPlatform") == 1, "the platform registers as one component"
    assert types.count("azure-native:containerservice:ManagedCluster") == 1, "it builds the cluster"
    gpu_pools = [p["name"] for p in settings["gpuPools"]]
    assert types.count("azure-native:containerservice:AgentPool") == 1 + len(gpu_pools), (
        "and the CPU pool and each GPU pool"
    )
    names = results["platform"]["pool_names"]
    assert [n[:-4] for n in names] == gpu_pools, "GPU pool names resolve: configured name + 4-char hash"

    pool = results["pool"]["registered"]
    # The consumer's cluster and provider register side by side: their order varies from run to run.
    clusters = [name for t, name in pool if t == "azure-native:containerservice:ManagedCluster"]
    assert clusters == ["aks"], "a GpuNodePool alone builds on the consumer's own cluster and creates none"
    assert [t for t, _ in pool].count("aks-gpu-platform:index:GpuNodePool") == 1, "it registers as one component"
    assert "azure-native:containerservice:AgentPool" in [t for t, _ in pool], "and creates its agent pool"
    assert results["pool"]["pool_names"][0].startswith("gpua100"), "its output resolves through the installed package"

    show = [python, "-m", "pip", "show", "--files", "--disable-pip-version-check", "aks-gpu-platform"]
    shown = subprocess.run(show, check=True, capture_output=True, text=True, env=env).stdout
    files = [line.strip() for line in shown.split("Files:", 1)[1].splitlines() if line.strip()]
    console = "../../../bin/aks-gpu-platform"  # the console command, in the virtualenv's bin/
    stray = [f for f in files if not f.startswith((f"{PACKAGE}/", f"{PACKAGE}-{VERSION}.dist-info/", console))]
    assert not stray, f"only {PACKAGE}/ is installed, no generic top-level package (config, components): {stray}"
    mapped = ("components/gpu/node_pool.py", "config/loader.py", "config/gpu/scheduling.py")
    mapped_files = {f"{PACKAGE}/{path}" for path in mapped}
    assert mapped_files <= set(files), "the mapped components/ and config/ and their packages are installed as files"
    assert f"{PACKAGE}/py.typed" in files, "the wheel marks itself typed (PEP 561), so editors read our annotations"
    top_level = (site / f"{PACKAGE}-{VERSION}.dist-info" / "top_level.txt").read_text().split()
    assert top_level == [PACKAGE], "the distribution declares one top-level name"
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert results["platform"]["version"] == version, (
        "an installed copy reports pyproject.toml's version (from its metadata: no pyproject.toml beside it)"
    )
    metadata = (site / f"{PACKAGE}-{VERSION}.dist-info" / "METADATA").read_text()
    assert "License-Expression: Apache-2.0" in metadata, "the wheel declares its licence for audits"
    assert any(f.endswith("/LICENSE") for f in files), "the wheel carries the licence text (Apache-2.0 requires it)"


def test_a_checkout_runs_the_program_from_source_through_its_editable_install(tmp_path: Path) -> None:
    # `make venvs` installs the checkout editable; the program (`make plan`, `pulumi up`) runs from the checkout's
    # folder. No links: the same on a clone made with Git for Windows' defaults.
    checkout = repository_copy(tmp_path / "checkout")
    python = planning_python(checkout, tmp_path)
    probe = (
        "import json, aks_gpu_platform as p\n"
        "from aks_gpu_platform import AksGpuPlatform, ClusterHandle, load_platform_config\n"
        "from aks_gpu_platform.config.gpu.scheduling import GPU_TAINT\n"
        "print(json.dumps({'platform': AksGpuPlatform.__module__, 'file': __import__(AksGpuPlatform.__module__,"
        " fromlist=['x']).__file__, 'version': p.__version__}))\n"
    )
    run = subprocess.run([python, "-c", probe], cwd=checkout, env=clean_environment(), capture_output=True, text=True)
    assert run.returncode == 0, f"an installed checkout must import the platform from its own folders:\n{run.stderr}"
    result = json.loads(run.stdout)
    assert result["platform"] == f"{PACKAGE}.components.platform", "one import name, in a checkout as installed"
    assert Path(result["file"]).is_relative_to(checkout / "components"), "the code comes from the checkout's folder"
    assert result["version"] == VERSION, "the checkout reports its pyproject.toml's version"


def test_help_on_the_platform_shows_its_own_arguments_and_outputs() -> None:
    import pydoc

    from aks_gpu_platform import AksGpuPlatform

    text = pydoc.plain(pydoc.render_doc(AksGpuPlatform))
    constructor = text.split("__init__(", 1)[1].split("stack_outputs(", 1)[0]
    assert ":param str t:" not in constructor and "remote" not in constructor, (
        "help() must describe the platform's own constructor, not ComponentResource's `t` and `remote`"
    )
    assert "config" in constructor and "opts" in constructor, "help() names the platform's arguments"
    outputs = [n for n in AksGpuPlatform.__annotations__ if not n.startswith("_")]
    missing = [n for n in outputs if n not in text.split("Methods defined here", 1)[0]]
    assert not missing, f"help() lists every output the platform exposes; missing: {missing}"


def test_the_importing_page_snippets_run_on_a_new_vnet_stack() -> None:
    from aks_gpu_platform.testing import evaluate

    page = (REPO_ROOT / "docs" / "importing.md").read_text()
    snippets = [block.split("\n", 1)[1] for block in page.split("```python")[1:]]
    snippets = [s.split("```", 1)[0] for s in snippets]
    assert len(snippets) == 2, "the page shows the platform import and a GpuNodePool beside it"
    config = load_stack_file("dev", REPO_ROOT)
    assert "existingSubnets" not in config["aks-gpu-platform:network"], "dev creates its VNet: the case to cover"
    scope: dict[str, Any] = {}
    recording = evaluate(lambda: exec("\n".join(snippets), scope), config, stack="dev")
    extra = [r for r in recording.of_type("azure-native:containerservice:AgentPool") if "extra-h100" in r.name]
    assert len(extra) == 1, "the page's GpuNodePool snippet builds its pool beside the platform"
    assert extra[0].inputs["vnetSubnetID"] == recording.one("azure-native:network:Subnet", "nodes").outputs["id"], (
        "the snippet's pool joins the platform's node subnet, read from the platform's network output"
    )


# A consumer's own Pulumi project and its pytest file, evaluated through the installed `aks_gpu_platform.testing`.
CONSUMER_PROGRAM = """
import pulumi
import pulumi_azure_native.containerservice as containerservice
import pulumi_kubernetes as k8s

config = pulumi.Config()
cluster = containerservice.ManagedCluster(
    "aks", resource_group_name="rg-team", location=config.require("region"), oidc_issuer_profile={"enabled": True}
)
k8s.core.v1.Namespace("team", metadata={"name": config.require("team")})
pulumi.export("issuer", cluster.oidc_issuer_profile.apply(lambda p: p.issuer_url if p else None))
"""
CONSUMER_TEST = """
import json
from aks_gpu_platform import testing


def test_the_stack_builds_its_cluster_and_a_valid_namespace():
    recording = testing.evaluate_stack_file("Pulumi.test.yaml")
    cluster = recording.one("azure-native:containerservice:ManagedCluster")
    assert cluster.inputs["location"] == "koreacentral"
    assert recording.stack_outputs["issuer"].startswith("https://")
    (namespace,) = testing.schema_verdicts(recording, "1.33")
    assert (namespace.kind, namespace.name, namespace.status) == ("Namespace", "vision", "valid")
    assert all(not found for policy, found in testing.policy_verdicts(recording, "dev") if policy.mandatory)
    print("RESULT " + json.dumps({"testing": testing.__file__, "issuer": recording.stack_outputs["issuer"]}))
"""


def consumer_tests_project(path: Path) -> Path:
    """A Pulumi project with a config default in Pulumi.yaml, a stack file, its program and a test of it."""
    path.mkdir()
    (path / "Pulumi.yaml").write_text(
        "name: gpu-team\nruntime: python\nconfig:\n  gpu-team:team:\n    type: string\n    default: vision\n"
    )
    (path / "Pulumi.test.yaml").write_text("config:\n  gpu-team:region: koreacentral\n")
    (path / "__main__.py").write_text(CONSUMER_PROGRAM)
    (path / "test_stack.py").write_text(CONSUMER_TEST)
    return path


def test_a_consumer_tests_its_own_program_with_the_installed_evaluation_api(
    installed: Installed, tmp_path: Path
) -> None:
    python, site, env = installed.python, installed.site, installed.env
    metadata = (site / f"{PACKAGE}-{VERSION}.dist-info" / "METADATA").read_text()
    assert (
        "Provides-Extra: testing" in metadata and "kubernetes-validate" in metadata.split("Provides-Extra: testing")[1]
    ), "`pip install 'aks-gpu-platform[testing]'` brings the Kubernetes schemas schema_verdicts needs"

    project = consumer_tests_project(tmp_path / "consumer")
    pytest = [python, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test_stack.py"]
    run = subprocess.run(pytest, cwd=project, capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, f"the consumer's test of its own stack passes offline:\n{run.stdout}\n{run.stderr}"
    (line,) = [line for line in run.stdout.splitlines() if "RESULT " in line]
    result = json.loads(line.split("RESULT ", 1)[1])
    assert Path(result["testing"]).is_relative_to(site / PACKAGE), (
        "aks_gpu_platform.testing comes from the installed wheel: the evaluation API ships with the package"
    )
