"""The numbers and names docs/for-ml-teams.md gives a team member are the ones the platform produces for dev.

Each is read from what makes it: the stack's outputs, the validated config, the plan's cost and cold-start
models, the dashboards the platform installs. A page that drifts from them sends a researcher to the wrong
cluster, the wrong pool or the wrong expectation.
"""

from __future__ import annotations

import json
import re
from typing import Any

from aks_gpu_platform.config import PlatformConfig, load_platform_config
from aks_gpu_platform.plan import cold_start, cost
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tests.upstream.autoscaler_template import template_node, why_not_template
from tests.upstream.kube_scheduler import selects_node
from tests.upstream.scheduling import AGENT_POOL
from tools import REPO_ROOT, team_pools

RAW_PAGE = (REPO_ROOT / "docs" / "for-ml-teams.md").read_text()
PAGE = " ".join(RAW_PAGE.split())  # as read, lines joined
DASHBOARDS = REPO_ROOT / "components" / "monitoring" / "dashboards"


def dev_config() -> PlatformConfig:
    return load_platform_config(settings_of(load_stack_file("dev", REPO_ROOT)))


def test_the_credentials_command_names_the_dev_outputs(dev_recording: Recording) -> None:
    outputs = dev_recording.stack_outputs
    expected = f"--resource-group {outputs['resourceGroupName']} --name {outputs['clusterName']}"
    assert expected in PAGE, f"`az aks get-credentials` must use dev's resourceGroupName and clusterName: {expected}"
    assert "`resourceGroupName` and `clusterName` outputs" in PAGE, "the page says which outputs to read"


def test_on_a_fleet_the_page_names_the_outputs_of_the_manager_teams_submit_to() -> None:
    """On a fleet, jobs go to the manager: its resource group and cluster name must be outputs the page names."""
    fleet = run_stack("fleet", project_dir=REPO_ROOT)
    outputs = fleet.stack_outputs
    named = re.findall(r"fleet stack.*?`(manager\w+)` and `(manager\w+)` outputs", PAGE)
    assert named, "the page says which outputs a team on a fleet reads for `az aks get-credentials`"
    ((group_output, cluster_output),) = named
    assert group_output in outputs and cluster_output in outputs, (
        f"both are outputs of the fleet stack, or the researcher has no resource group to pass: {sorted(outputs)}"
    )
    clusters = [
        r.inputs
        for r in fleet.of_type("azure-native:containerservice:ManagedCluster")
        if r.inputs.get("resourceName") == outputs[cluster_output]
    ]
    assert [c["resourceGroupName"] for c in clusters] == [outputs[group_output]], (
        "`--resource-group` and `--name` from these outputs address the manager cluster"
    )


def _generated_tables() -> dict[str, dict[str, list[dict[str, str]]]]:
    """The page's generated block as a researcher reads it: per stack, its pool rows and team rows by column."""
    block = team_pools.BLOCK.search(RAW_PAGE)
    assert block, "the page carries the generated pool and team tables"
    stacks: dict[str, dict[str, list[dict[str, str]]]] = {}
    stack = ""
    for section in re.split(r"^\*\*(\w+)\*\* ", block.group(0), flags=re.M)[1:]:
        if section in team_pools.STACKS:
            stack = section
            stacks[stack] = {}
            continue
        for table in re.findall(r"((?:^\|.*\|\n)+)", section, flags=re.M):
            header, _, *rows = table.strip().splitlines()
            columns = [c.strip() for c in header.strip("|").split("|")]
            cells = [[c.strip().strip("`") for c in row.strip("|").split("|")] for row in rows]
            stacks[stack]["team" if columns[0] == "team" else "pool"] = [
                dict(zip(columns, c, strict=True)) for c in cells
            ]
    return stacks


def test_the_generated_tables_are_todays_stacks(recordings: dict[str, Recording]) -> None:
    configs = {stack: team_pools.stack_config(stack) for stack in team_pools.STACKS}
    block = team_pools.generated_block(recordings, configs)
    assert team_pools.page_with(block, RAW_PAGE) == RAW_PAGE, (
        "the pools and quotas a researcher reads are those the stacks deploy: run `python -m tools.team_pools`"
    )
    assert set(_generated_tables()) == {"dev", "prod"}, "every stack a team may be on has its tables"


def _pod(selector: dict[str, str], tolerations: list[Any], gpus: int) -> dict[str, Any]:
    requests = {"cpu": "1", "nvidia.com/gpu": str(gpus)}
    return {"nodeSelector": selector, "tolerations": tolerations, "containers": [{"resources": {"requests": requests}}]}


def test_each_pool_row_picks_that_pool_with_the_gpus_it_states(recordings: dict[str, Recording]) -> None:
    """A pod with the row's nodeSelector, admitted on the row's flavour, lands on that pool and only there."""
    for stack, tables in _generated_tables().items():
        recording = recordings[stack]
        flavors = {f.inputs["metadata"]["name"]: f.inputs["spec"] for f in team_pools.gpu_flavors(recording)}
        pools = {p.inputs["agentPoolName"]: p.inputs for p in recording.of_type(AGENT_POOL)}
        templates = [template_node(p) for p in pools.values()]
        rdma = team_pools.rdma_node_affinity(recording)
        assert {row["pool (Kueue flavour)"] for row in tables["pool"]} == set(flavors), (
            f"{stack}: the table lists every GPU ResourceFlavor a team's job can be admitted on, and no other"
        )
        for row in tables["pool"]:
            name = row["pool (Kueue flavour)"]
            key, value = (part.strip() for part in row["nodeSelector"].split(":"))
            per_node = int(row["GPUs per node"])
            pod = _pod({key: value}, flavors[name].get("tolerations", []), per_node)
            fits = [t.pool for t in templates if not why_not_template(pod, t)]
            assert len(fits) == 1, f"{stack} {name}: the row's nodeSelector picks one pool, found {fits}"
            (node,) = [t for t in templates if t.pool == fits[0]]
            assert node.labels.get("gpu-pool") == name, f"{stack}: `{key}: {value}` lands on pool {name}"
            too_many = _pod({key: value}, flavors[name].get("tolerations", []), per_node + 1)
            assert why_not_template(too_many, node), f"{stack} {name}: a node offers {per_node} GPUs, no more"
            assert int(row["nodes at most"]) == pools[fits[0]]["maxCount"], f"{stack} {name}: the pool's maxCount"
            offers_ib = rdma is not None and selects_node(rdma, node.labels)
            assert row["InfiniBand"] == ("yes" if offers_ib else "no"), (
                f"{stack} {name}: InfiniBand says whether `rdma/ib` is advertised there (the RDMA plugin's nodes)"
            )


def test_each_team_row_is_a_quota_the_team_can_submit_against(recordings: dict[str, Recording]) -> None:
    for stack, tables in _generated_tables().items():
        recording = recordings[stack]
        queues = {q.inputs["metadata"]["name"]: q.inputs["spec"] for q in recording.of_type(cost.CLUSTER_QUEUE)}
        local = {
            (q.inputs["metadata"]["namespace"], q.inputs["metadata"]["name"]): q.inputs["spec"]
            for q in recording.of_type(team_pools.LOCAL_QUEUE)
        }
        outputs = recording.stack_outputs["trainingTeams"]
        for team, spec in queues.items():
            order = [f["name"] for g in spec["resourceGroups"] for f in g["flavors"]]
            listed = [row["pool (Kueue flavour)"] for row in tables["team"] if row["team"] == team]
            assert listed == [f for f in order if f in listed], (
                f"{stack}: team {team}'s pools are listed in the order Kueue tries its flavours"
            )
        for row in tables["team"]:
            team, namespace, queue = row["team"], row["namespace"], row["LocalQueue"]
            assert local[(namespace, queue)]["clusterQueue"] == team, (
                f"{stack}: LocalQueue {queue} in {namespace} submits to team {team}'s quota"
            )
            assert outputs[team]["namespace"] == namespace and outputs[team]["localQueue"] == queue, (
                f"{stack}: the trainingTeams output the admins hand out says the same namespace and queue"
            )
            pool = row["pool (Kueue flavour)"]
            assert pool in outputs[team]["gpuPools"], f"{stack}: {pool} is one of team {team}'s gpuPools"
            amount, resource = row["quota"].split(" ")
            (flavor,) = [f for g in queues[team]["resourceGroups"] for f in g["flavors"] if f["name"] == pool]
            (quota,) = [r for r in flavor["resources"] if r["name"] == resource.strip("`")]
            assert int(quota["nominalQuota"]) == int(amount), f"{stack}: team {team}'s quota on {pool}"
            limit = quota.get("borrowingLimit")
            assert (f"up to {limit} " in row["borrowing beyond it"]) == (limit is not None), (
                f"{stack}: team {team} on {pool}: the borrowing limit Kueue enforces"
            )


def test_the_quota_ceiling_is_the_plans(dev_recording: Recording) -> None:
    (ceiling,) = cost.team_quota_ceilings(dev_recording, cost.pool_capacities(dev_recording))
    expected = f"{cost.monthly_usd(ceiling.monthly)}/month for {ceiling.gpus} T4s"
    assert expected in PAGE, f"the cost a team reads is the plan's quota ceiling: {expected}"


def test_the_cold_start_figures_are_the_plans(dev_recording: Recording) -> None:
    (budget,) = cold_start.budgets(dev_config(), cost.pool_capacities(dev_recording))
    figures = {stage.name: stage.figure for stage in budget.stages}
    react, boot = figures["autoscaler reacts"], figures["VM + node bootstrap"]
    assert f"reacts in about {react.high_s:g} s" in PAGE, "the autoscaler's delay as the plan states it"
    assert f"in up to {boot.high_s:g} s" in PAGE, "the VM and node bootstrap bound as the plan states it"


def test_the_scale_down_delay_is_the_clusters() -> None:
    minutes = dev_config().cluster.autoscaler_profile.scale_down_unneeded_minutes
    assert f"removes it, {minutes} minutes after its last pod ends" in PAGE


def team_dashboards(recording: Recording, team: str) -> list[dict[str, Any]]:
    """The dashboards a member of `team` may open: those in a folder whose permissions give the Grafana team synced
    from the team's Entra ID groups View (or more). Members hold only Grafana Viewer, which opens no other folder."""
    groups = {g.lower() for t in dev_config().training.teams if t.name == team for g in t.members}
    grafana_teams = {
        str(t.outputs["teamId"])
        for t in recording.of_type("grafana:oss/team:Team")
        if groups & set(t.inputs.get("teamSync", {}).get("groups", []))
    }
    folders = {
        p.inputs["folderUid"]
        for p in recording.of_type("grafana:oss/folderPermission:FolderPermission")
        if any(str(e.get("teamId")) in grafana_teams for e in p.inputs["permissions"])
    }
    return [
        json.loads(d.inputs["configJson"])
        for d in recording.of_type("grafana:oss/dashboard:Dashboard")
        if d.inputs["folder"] in folders
    ]


def test_the_dashboards_and_panels_the_page_names_are_ones_the_team_can_open(dev_recording: Recording) -> None:
    titles: set[str] = set()

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            titles.add(panel.get("title", ""))
            walk(panel.get("panels", []))

    reachable = team_dashboards(dev_recording, "ml")
    assert reachable, "team ml has a dashboard of its own"
    for board in reachable:
        walk(board.get("panels", []))
    boards = {b["title"] for b in reachable}
    every_board = {
        json.loads(d.inputs["configJson"])["title"] for d in dev_recording.of_type("grafana:oss/dashboard:Dashboard")
    }
    named_boards = re.findall(r"dashboard \*([^*]+)\*", PAGE)
    named_boards += [t for t in every_board if f"*{t}*" in PAGE or f'"{t}"' in PAGE]
    assert named_boards, "the page names the team's dashboard"
    assert not [b for b in named_boards if b not in boards], (
        f"the page names dashboards team ml cannot open: {[b for b in named_boards if b not in boards]}"
    )
    named = re.findall(r"panel \*([^*]+)\*", PAGE) + re.findall(r"\*([^*]+)\*, panel", PAGE)
    assert named, "the page names the panels to read"
    missing = [n for n in named if n not in titles and n not in boards]
    assert not missing, f"the page names panels that team ml's dashboards do not have: {missing}"


def test_the_gpus_the_page_counts_on_the_dev_pool_are_the_stacks(dev_recording: Recording) -> None:
    from tests.upstream.capacity import gpu_pools, pinned_gpu_workloads

    found = re.search(
        r"the T4 pool's (\d+) GPUs are (\d+) for team `(\w+)`'s quota, (\d+) for the inference sample's pod and "
        r"(\d+) for model `([\w.-]+)`'s kept-up replica",
        PAGE,
    )
    assert found, "the page says how the dev T4 pool's GPUs are shared"
    total, quota, team, sample, model_gpus, model = found.groups()
    (pool,) = gpu_pools(dev_recording).values()
    assert int(total) == pool.max_count * pool.allocatable["nvidia.com/gpu"], "the pool's nodes times GPUs per node"
    queues = {q.inputs["metadata"]["name"]: q.inputs["spec"] for q in dev_recording.of_type(cost.CLUSTER_QUEUE)}
    nominal = [
        int(r["nominalQuota"])
        for g in queues[team]["resourceGroups"]
        for f in g["flavors"]
        for r in f["resources"]
        if r["name"] == "nvidia.com/gpu"
    ]
    assert int(quota) == sum(nominal), f"team {team}'s GPU quota"
    kept: dict[str, int] = {}
    for pinned in pinned_gpu_workloads(dev_recording):
        gpus = sum(int(c["resources"]["requests"].get("nvidia.com/gpu", 0)) for c in pinned.spec["containers"])
        kept[pinned.source.split("/")[0]] = kept.get(pinned.source.split("/")[0], 0) + gpus * pinned.replicas
    assert int(sample) == kept["gpu-inference-sample"], "the inference sample's kept-up GPUs"
    assert int(model_gpus) == kept["models"], f"model {model}'s kept-up GPUs"
    assert {p.source for p in pinned_gpu_workloads(dev_recording) if p.source.startswith("models/")} == {
        f"models/{model}"
    }, "the model the page names is the one that keeps a GPU"
    assert int(quota) + int(sample) + int(model_gpus) == int(total), "the page accounts for every GPU of the pool"


def test_the_page_sends_a_member_to_platform_info_and_never_to_the_stack(dev_recording: Recording) -> None:
    """A member has no Pulumi and no stack access: every value the page says to look up is a key of the ConfigMap
    `platform-info` in the member's namespace, and no command of the page reads the stack."""
    assert "pulumi stack" not in PAGE, "a team member cannot read the platform's stack outputs"
    for output in ("grafanaEndpoint", "modelEndpoints", "teamData", "lustrePvcName"):
        assert f"`{output}`" not in PAGE, f"the page sends a member to the stack output {output}"
    namespace = dev_recording.stack_outputs["trainingTeams"]["ml"]["namespace"]
    (info,) = [
        c.inputs["data"]
        for c in dev_recording.of_type("kubernetes:core/v1:ConfigMap")
        if c.inputs["metadata"] == {"name": "platform-info", "namespace": namespace}
    ]
    named = set(re.findall(r"`(\w+)` in `platform-info`", PAGE))
    table = re.search(r"\| key \| what \|\n\| --- \| --- \|\n((?:\|.*\|\n)+)", RAW_PAGE)
    assert table, "the page lists platform-info's keys"
    for row in table.group(1).splitlines():
        named |= set(re.findall(r"`(\w+)`", row.split("|")[1]))
    assert named, "the page names platform-info's keys"
    assert named <= set(info), f"the page names keys platform-info does not have: {named - set(info)}"
    assert f"kubectl get configmap platform-info -n {namespace} -o yaml" in PAGE
