"""`components` and `config` install with pip and build under mocks outside this repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from tools.stack_files import REPO_ROOT

# A consumer stack in miniature: imports the installed packages, builds a pool under mocks.
CONSUMER = """
import json, pulumi
from pulumi.runtime import mocks

class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        registered.append(args.typ)
        return args.name + "-id", {**args.inputs, "name": args.inputs.get("agentPoolName", args.name)}
    def call(self, args):
        return {}, []

registered = []
pulumi.runtime.set_mocks(Mocks(), project="consumer", stack="test")

import components, config
from components.gpu_node_pool import GpuNodePool
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

names = []

def program():
    pool = GpuNodePool("gpu", {
        "resource_group_name": "rg-consumer",
        "cluster_name": "aks-consumer",
        "nodes_subnet_id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/n",
        "settings": {"name": "gpua100", "vmSize": "Standard_NC24ads_A100_v4", "maxCount": 4},
        "stack_mode": "devicePlugin",
        "kubernetes_version": "1.33",
        "tracks_versions": False,
    })
    pool.pool_name.apply(names.append)

_sync_await(run_pulumi_func(program))
print(json.dumps({"components": components.__file__, "config": config.__file__, "registered": registered,
                  "pool_name": names, "version": config.__version__}))
"""


def test_pip_installed_components_build_in_another_stack(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for item in ("pyproject.toml", "LICENSE", "components", "config"):
        copy = shutil.copytree if (REPO_ROOT / item).is_dir() else shutil.copy
        copy(REPO_ROOT / item, source / item)
    target = tmp_path / "site"
    # --no-deps: the SDKs come from the running interpreter; only this repository's packages are installed.
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(source)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    consumer = tmp_path / "consumer"
    consumer.mkdir()
    (consumer / "__main__.py").write_text(CONSUMER)
    env = {**os.environ, "PYTHONPATH": str(target)}
    run = subprocess.run(
        [sys.executable, "__main__.py"], cwd=consumer, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, f"the installed components must build in a foreign stack:\n{run.stderr}"
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["components"].startswith(str(target)), "components must come from the pip install, not the repo"
    assert result["config"].startswith(str(target)), "config must come from the pip install, not the repo"
    assert result["registered"][0] == "aks-gpu-platform:index:GpuNodePool", "the installed component must register"
    assert "azure-native:containerservice:AgentPool" in result["registered"], "and build its agent pool"
    assert result["pool_name"][0].startswith("gpua100"), "the pool's output must resolve through the installed package"
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert result["version"] == version, (
        "an installed copy must report pyproject.toml's version (from its metadata: no pyproject.toml beside it)"
    )
    (dist,) = [d for d in metadata.distributions(path=[str(target)]) if d.metadata["Name"] == "aks-gpu-platform"]
    assert dist.metadata["License-Expression"] == "Apache-2.0", "the wheel must declare its licence for audits"
    licence_files = [f for f in dist.files or [] if f.name == "LICENSE"]
    assert licence_files, "the wheel must carry the licence text (Apache-2.0 requires it with every copy)"
