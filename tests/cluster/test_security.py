"""Security baseline switches reach the cluster by value, and bad switches name their field."""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from aks_gpu_platform.components.gpu.node_images import GPU_OPERATOR_OPERANDS as GPU_OPERATOR_CHART_OPERANDS
from aks_gpu_platform.components.monitoring import grafana as gd
from aks_gpu_platform.components.shared import roles
from aks_gpu_platform.config import ConfigError, load_platform_config
from aks_gpu_platform.config.catalog.images import (
    FROM_UPSTREAM,
    GPU_OPERATOR_OPERANDS,
    PINNED,
    UNPINNED,
    qualified,
    unpinned_reason,
)
from aks_gpu_platform.config.catalog.vm_sizes import ephemeral_os_disk_limit_gib
from aks_gpu_platform.plan.offline import run_stack
from aks_gpu_platform.testing import Recording
from aks_gpu_platform.testing.stack_files import load_stack_file
from tests.conftest import settings_of
from tests.gpu.test_aks_managed import managed_config
from tests.gpu.test_amd_gpu import amd_variant
from tests.gpu.test_scheduling import VARIANTS, variant_config
from tests.upstream.abac import (
    ATTRIBUTE_PREFIX,
    Access,
    ConditionError,
    allows,
    role_assignment_delete,
    role_assignment_write,
)
from tests.upstream.arm_spec import load_specs, schema_problems
from tests.upstream.artifact_cache import cached_upstream
from tests.upstream.pod_security_policy import INITIATIVE, POLICY_ASSIGNMENT, admission
from tests.upstream.pod_security_policy import assignments as pod_security_assignments
from tests.upstream.pod_security_standard import enforced_level
from tests.upstream.pod_security_standard import violations as pss_violations
from tests.upstream.release_contract import release_facts
from tests.upstream.scheduling import POD_SPEC_PATHS, RELEASE
from tests.upstream.scheduling import _at as pod_spec_at
from tools import REPO_ROOT, deploy_identity
from tools.arm import arm_resource

CLUSTER = "azure-native:containerservice:ManagedCluster"
AGENT_POOL = "azure-native:containerservice:AgentPool"
STORAGE_ACCOUNT = "azure-native:storage:StorageAccount"
PRIVATE_ENDPOINT = "azure-native:network:PrivateEndpoint"


def _pools(recording: Recording) -> dict[str, dict[str, Any]]:
    """Every node pool: the system pool inline in the cluster (by pool name) and each AgentPool (by resource name)."""
    pools = {p["name"]: p for p in recording.one(CLUSTER).inputs["agentPoolProfiles"]}
    pools.update({r.name.removeprefix("platform-"): r.inputs for r in recording.of_type(AGENT_POOL)})
    return pools


@pytest.mark.parametrize(("stack", "encrypted"), [("dev", False), ("prod", True)])
def test_every_pool_follows_the_encryption_at_host_switch(
    recordings: dict[str, Recording], stack: str, encrypted: bool
) -> None:
    pools = _pools(recordings[stack])
    cfg = load_platform_config(settings_of(load_stack_file(stack, REPO_ROOT)))
    assert len(pools) == 2 + len(cfg.gpu_pools), "system, CPU and every GPU pool"
    assert {name: p.get("enableEncryptionAtHost") for name, p in pools.items()} == dict.fromkeys(pools, encrypted), (
        "security.encryptionAtHost reaches every pool: temp disks and disk caches are encrypted on the host"
    )


def test_prod_uses_ephemeral_os_disks_where_they_fit(prod_recording: Recording) -> None:
    pools = _pools(prod_recording)
    assert {name: p["osDiskType"] for name, p in pools.items()} == {
        "system": "Ephemeral",
        "cpu-pool": "Ephemeral",
        "gpu-gpua100-pool": "Managed",
        **dict.fromkeys(["gpu-h100z1-pool", "gpu-h100z2-pool", "gpu-h100z3-pool"], "Ephemeral"),
    }, "the A100 size's 64 GiB temp disk cannot hold a 128 GiB OS disk; every other prod size can"
    for name, p in pools.items():
        if p["osDiskType"] == "Ephemeral":
            limit = ephemeral_os_disk_limit_gib(p["vmSize"])
            assert limit is not None and p["osDiskSizeGB"] <= limit, f"{name}: the OS disk must fit the temp disk"


def test_dev_pools_keep_managed_os_disks(dev_recording: Recording) -> None:
    assert {p["osDiskType"] for p in _pools(dev_recording).values()} == {"Managed"}


def test_prod_hsm_account_is_reachable_only_through_its_blob_private_endpoint(prod_recording: Recording) -> None:
    r = prod_recording
    account = r.one(STORAGE_ACCOUNT, "hsm")
    i = account.inputs
    assert (i["publicNetworkAccess"], i["networkRuleSet"]) == (
        "Disabled",
        {"defaultAction": "Deny", "bypass": "AzureServices"},
    ), "no public endpoint for the training data and checkpoints"
    assert (i["minimumTlsVersion"], i["enableHttpsTrafficOnly"]) == ("TLS1_2", True), "TLS 1.2+, HTTPS only"
    assert i["allowSharedKeyAccess"] is True, "Azure Managed Lustre's blob integration needs account key access"
    endpoint = r.one(PRIVATE_ENDPOINT, "lustre-hsm")
    (connection,) = endpoint.inputs["privateLinkServiceConnections"]
    assert connection["privateLinkServiceId"] == account.outputs["id"]
    assert connection["groupIds"] == ["blob"], "the blob sub-resource is what the Lustre HSM reads and writes"
    assert endpoint.inputs["subnet"]["id"] == r.one("azure-native:network:Subnet", "private-endpoints").outputs["id"]
    zone = r.one("azure-native:privatedns:PrivateZone", "lustre-hsm")
    assert zone.inputs["privateZoneName"] == "privatelink.blob.core.windows.net"
    link = r.one("azure-native:privatedns:VirtualNetworkLink", "lustre-hsm")
    assert link.inputs["virtualNetwork"]["id"] == r.one("azure-native:network:VirtualNetwork").outputs["id"], (
        "the Lustre subnet's VNet resolves the account name to the endpoint"
    )
    group = r.one("azure-native:network:PrivateDnsZoneGroup", "lustre-hsm")
    assert group.inputs["privateDnsZoneConfigs"][0]["privateDnsZoneId"] == zone.outputs["id"]
    filesystem = r.one("azure-native:storagecache:AmlFilesystem")
    assert {endpoint.urn, group.urn, link.urn} <= set(filesystem.depends_on), (
        "the filesystem imports from Blob at creation: the private path must resolve first"
    )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_policy_addon_and_rotating_secrets_store_are_on(recordings: dict[str, Recording], stack: str) -> None:
    addons = recordings[stack].one(CLUSTER).inputs["addonProfiles"]
    assert addons["omsagent"]["enabled"] is True, "merging the security add-ons keeps Container Insights"
    assert addons["azurepolicy"] == {"enabled": True}, "Azure Policy audits every object the cluster admits"
    store = addons["azureKeyvaultSecretsProvider"]
    assert store["enabled"] is True
    assert store["config"] == {"enableSecretRotation": "true", "rotationPollInterval": "2m"}, (
        "rotated Key Vault secrets must reach running pods"
    )


def test_prod_defender_reports_to_the_platform_workspace(prod_recording: Recording) -> None:
    workspace = prod_recording.one("azure-native:operationalinsights:Workspace").outputs["id"]
    defender = prod_recording.one(CLUSTER).inputs["securityProfile"]["defender"]
    assert defender == {"logAnalyticsWorkspaceResourceId": workspace, "securityMonitoring": {"enabled": True}}


def test_dev_runs_without_defender(dev_recording: Recording) -> None:
    assert "defender" not in dev_recording.one(CLUSTER).inputs["securityProfile"], "dev skips the Defender plan"


def test_disabled_secrets_store_sends_no_config(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = settings_of(stack_config("dev"))
    settings["security"]["secretsStore"] = {"enabled": False}
    profiles = load_platform_config(settings).security.addon_profiles()
    assert profiles["azureKeyvaultSecretsProvider"] == {"enabled": False, "config": None}


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (
            {"defender": {"enabled": True, "logAnalyticsWorkspaceId": "log-1"}},
            "security.defender.logAnalyticsWorkspaceId:",
        ),
        ({"secretsStore": {"rotationPollInterval": "2 minutes"}}, "security.secretsStore.rotationPollInterval:"),
        ({"azurePolicy": "sometimes"}, "security.azurePolicy:"),
        ({"encryptionAtHost": "sometimes"}, "security.encryptionAtHost:"),
        ({"podSecurity": {"effect": "Block"}}, "security.podSecurity.effect:"),
        ({"azurePolicy": False}, "security.podSecurity.enabled:"),
        ({"podSecurity": {"excludedNamespaces": ["team-ml"]}}, "security.podSecurity.excludedNamespaces[0]:"),
        ({"podSecurity": {"excludedNamespaces": ["Team_ML"]}}, "security.podSecurity.excludedNamespaces[0]: got"),
    ],
)
def test_invalid_security_setting_names_its_field(
    stack_config: Callable[[str], dict[str, Any]], change: dict[str, Any], path: str
) -> None:
    settings = settings_of(stack_config("dev"))
    settings["security"] = change
    with pytest.raises(ConfigError) as raised:
        load_platform_config(settings)
    assert any(p.startswith(path) for p in raised.value.problems), raised.value.problems


@pytest.mark.parametrize(
    ("section", "change", "path", "says"),
    [
        (
            "gpuPools",
            {"osDiskType": "Ephemeral", "osDiskSizeGb": 200},
            "gpuPools[0].osDiskType:",
            "osDiskSizeGb 200 does not fit the 176 GiB temp disk of Standard_NC4as_T4_v3",
        ),
        ("systemPool", {"osDiskType": "Ephemeral", "osDiskSizeGb": 200}, "systemPool.osDiskType:", "150 GiB"),
        ("cpuPool", {"vmSize": "Standard_E8s_v5", "osDiskType": "Ephemeral"}, "cpuPool.osDiskType:", "catalog"),
    ],
)
def test_ephemeral_os_disk_that_does_not_fit_names_the_pool_field(
    stack_config: Callable[[str], dict[str, Any]], section: str, change: dict[str, Any], path: str, says: str
) -> None:
    settings = settings_of(stack_config("dev"))
    target = settings["gpuPools"][0] if section == "gpuPools" else settings[section]
    target.update(change)
    with pytest.raises(ConfigError) as raised:
        load_platform_config(settings)
    (problem,) = [p for p in raised.value.problems if p.startswith(path)]
    assert says in problem, f"the message says the size and the SKU's limit: {problem}"


def test_ephemeral_os_disk_on_the_a100_size_is_rejected_at_the_default_size(
    stack_config: Callable[[str], dict[str, Any]],
) -> None:
    settings = settings_of(stack_config("prod"))
    settings["gpuPools"][0]["osDiskType"] = "Ephemeral"
    with pytest.raises(ConfigError) as raised:
        load_platform_config(settings)
    assert any(
        p.startswith("gpuPools[0].osDiskType:") and "128" in p and "64 GiB" in p and "Standard_NC24ads_A100_v4" in p
        for p in raised.value.problems
    ), raised.value.problems


def test_invalid_storage_network_switch_names_its_field(stack_config: Callable[[str], dict[str, Any]]) -> None:
    settings = settings_of(stack_config("prod"))
    settings["storage"]["lustre"]["blob"]["publicNetworkAccess"] = "sometimes"
    with pytest.raises(ConfigError) as raised:
        load_platform_config(settings)
    assert any(p.startswith("storage.lustre.blob.publicNetworkAccess:") for p in raised.value.problems)


# --- the CI deploy identity may assign only the roles the platform assigns ------------------------------------------

ROLE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
ARM_SPECS = load_specs()
OWNER = "8e3af657-a8ff-443c-a75c-2fe8c4bcb635"
USER_ACCESS_ADMINISTRATOR = "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9"
ROLE_DEFINITIONS = "/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/"
_RECORDING_AZ = """#!/bin/sh
# A stand-in `az`: each call's arguments, one JSON list a line.
python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >> "$AZ_CALLS"
"""


@pytest.fixture(scope="module")
def ci_stacks(recordings: dict[str, Recording]) -> dict[str, Recording]:
    """The stacks CI deploys, the fleet, and dev with each setting that assigns a role of its own switched on:
    every role assignment the program makes is in one of them."""
    with_logs = copy.deepcopy(load_stack_file("dev", REPO_ROOT))
    with_logs["aks-gpu-platform:monitoring"]["grafana"]["containerLogs"] = True  # Grafana reads Log Analytics
    return {**recordings, "fleet": run_stack("fleet"), "dev-grafana-logs": run_stack("dev", with_logs)}


def _documented_commands() -> str:
    """The deploy identity's setup as docs/delivery.md shows it (the shell block after its marker)."""
    text = (REPO_ROOT / "docs" / "delivery.md").read_text()
    block = text.split("<!-- deploy identity commands: python -m tools.deploy_identity -->\n```sh\n", 1)[1]
    return block.split("\n```", 1)[0]


@pytest.fixture(scope="module")
def granted(tmp_path_factory: pytest.TempPathFactory) -> list[list[str]]:
    """The `az` calls the documented commands make, run by bash as a user pastes them."""
    folder = tmp_path_factory.mktemp("az")
    (folder / "az").write_text(_RECORDING_AZ)
    (folder / "az").chmod(0o755)
    calls = folder / "calls"
    env = {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}", "AZ_CALLS": str(calls)}
    env |= {"ASSIGNEE": "11111111-2222-4333-8444-555555555555", "SCOPE": "/subscriptions/s/resourceGroups/rg"}
    env["SUBSCRIPTION"] = "s"
    subprocess.run(["bash", "-e", "-c", _documented_commands()], env=env, check=True)
    return [json.loads(line) for line in calls.read_text().splitlines()]


def _assignment(calls: list[list[str]], role: str) -> list[str]:
    (call,) = [c for c in calls if c[:3] == ["role", "assignment", "create"] and c[c.index("--role") + 1] == role]
    return call


@pytest.fixture(scope="module")
def ci_condition(granted: list[list[str]]) -> str:
    call = _assignment(granted, deploy_identity.RBAC_ADMINISTRATOR)
    assert call[call.index("--condition-version") + 1] == "2.0", "role-assignment conditions are version 2.0"
    return call[call.index("--condition") + 1]


def test_the_documented_setup_is_the_tools_output() -> None:
    assert _documented_commands() == deploy_identity.commands(), (
        "docs/delivery.md shows what `python -m tools.deploy_identity` prints: regenerate the block"
    )


def test_the_deploy_identity_gets_no_unconstrained_right_to_assign_roles(granted: list[list[str]]) -> None:
    roles_granted = [c[c.index("--role") + 1] for c in granted if c[:3] == ["role", "assignment", "create"]]
    assert not {OWNER, USER_ACCESS_ADMINISTRATOR, "Owner", "User Access Administrator"} & set(roles_granted), (
        "with either, code that lands on main can grant Owner to anyone"
    )
    rbac = _assignment(granted, deploy_identity.RBAC_ADMINISTRATOR)
    assert "--condition" in rbac, "Role Based Access Control Administrator without a condition assigns any role"
    definition = next(c for c in granted if c[:3] == ["role", "definition", "create"])
    role = json.loads(definition[definition.index("--role-definition") + 1])
    assert role["AssignableScopes"] == ["/subscriptions/s"], "the role is defined in the deploying subscription"
    actions = role["Actions"]
    assert all(a.startswith("Microsoft.Authorization/policyAssignments/") for a in actions), (
        "the policy role writes assignments only: an exemption would switch the organisation's policies off"
    )


def test_the_deploy_identity_reaches_kubernetes_from_the_first_deploy(granted: list[list[str]]) -> None:
    """`pulumi up` creates the cluster and then, in the same run, every Kubernetes object through it (Entra ID with
    Azure RBAC, local accounts off). A grant on the cluster can only be made once the cluster exists, so the first
    CI deploy of a new stack would get Forbidden on its first Kubernetes object; a grant on the resource group the
    cluster is created in covers it from its creation (Azure RBAC assignments are inherited)."""
    rbac_cluster_admin = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"  # Azure Kubernetes Service RBAC Cluster Admin
    grant = _assignment(granted, rbac_cluster_admin)
    assert grant[grant.index("--scope") + 1] == "/subscriptions/s/resourceGroups/rg", (
        "the deploy identity's Kubernetes role is granted on the stack's resource group, there before the cluster"
    )


def _is_deployer(recording: Recording, assignment: Any) -> bool:
    return recording.mock_values.get(str(assignment.inputs["principalId"])) == "getClientConfig.objectId"


@pytest.mark.parametrize("stack", ["dev", "prod", "fleet"])
def test_the_deploy_identity_can_create_and_delete_every_role_assignment_the_platform_makes(
    ci_stacks: dict[str, Recording], ci_condition: str, stack: str
) -> None:
    recording = ci_stacks[stack]
    assignments = [a for a in recording.of_type(ROLE_ASSIGNMENT) if not _is_deployer(recording, a)]
    assert assignments
    refused = [
        f"{a.name}: {roles.ROLE_NAMES.get(str(a.inputs['roleDefinitionId']).rsplit('/', 1)[-1])} "
        f"to a {a.inputs['principalType']}"
        for a in assignments
        for access in (role_assignment_write, role_assignment_delete)
        if not allows(ci_condition, access(str(a.inputs["roleDefinitionId"]), str(a.inputs["principalType"])))
    ]
    assert not refused, (
        "the CI deploy would fail with 403 on these role assignments: add the role and principal type to "
        f"tools/deploy_identity.py ASSIGNABLE and re-run the setup, or do not assign it:\n{refused}"
    )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_deployers_own_grafana_grant_passes_the_condition(
    ci_stacks: dict[str, Recording], ci_condition: str, stack: str
) -> None:
    recording = ci_stacks[stack]
    (own,) = [a for a in recording.of_type(ROLE_ASSIGNMENT) if _is_deployer(recording, a)]
    access = role_assignment_write(str(own.inputs["roleDefinitionId"]), str(own.inputs["principalType"]))
    assert allows(ci_condition, access), "in CI the deployer is the deploy identity, a service principal"


def _person_token() -> str:
    """The claims of the delegated token `az login` gives a person (docs/deploying.md's first deploy)."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    claims = {"oid": "o", "idtyp": "user", "scp": "user_impersonation"}
    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.signature"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_ci_can_remove_the_grafana_grant_a_persons_first_deploy_made(
    ci_stacks: dict[str, Recording], ci_condition: str, stack: str
) -> None:
    """A stack first deployed from a workstation holds the person's Grafana Admin grant (principal type User). When
    CI takes over, the deployer changes, Pulumi replaces the grant and deletes the person's: a refused delete fails
    that deploy and every one after it."""
    recording = ci_stacks[stack]
    (own,) = [a for a in recording.of_type(ROLE_ASSIGNMENT) if _is_deployer(recording, a)]
    person = gd.principal_type_of_token(_person_token())
    assert person is not None and person.value == "User", "a person's deploy names its own grant as a user's"
    by_person, role = person.value, str(own.inputs["roleDefinitionId"])
    assert allows(ci_condition, role_assignment_delete(role, by_person)), (
        "the deploy identity must be able to delete the person's Grafana Admin grant it replaces"
    )
    assert not allows(ci_condition, role_assignment_write(role, by_person)), (
        "deleting the person's grant is allowed; granting a user Grafana Admin is not"
    )


def _documented_roles() -> dict[str, set[str]]:
    """The roles docs/delivery.md says each principal type may be given, by display name."""
    text = " ".join((REPO_ROOT / "docs" / "delivery.md").read_text().split())
    found = {}
    for principal, pattern in (
        ("ServicePrincipal", r"service principals \(.*?\) get (.*?);"),
        ("Group", r"Entra ID groups get (.*?)\."),
    ):
        match = re.search(pattern, text)
        assert match, f"docs/delivery.md no longer says what {principal}s get"
        found[principal] = set(re.split(r", | and ", match.group(1)))
    return found


def test_the_delivery_docs_name_the_roles_the_condition_admits() -> None:
    """The person who runs the setup checks the condition against this list: a wrong name misleads the audit."""
    admitted = {p: {roles.ROLE_NAMES[g] for g in guids} for p, guids in deploy_identity.ASSIGNABLE.items()}
    assert _documented_roles() == admitted, "docs/delivery.md lists other roles than tools/deploy_identity.py admits"


def test_the_condition_admits_exactly_the_roles_and_principal_types_the_platform_assigns(
    ci_stacks: dict[str, Recording],
) -> None:
    rendered = {
        # The deployer's own grant goes to the deploy identity, a service principal, whatever the program sends.
        (
            "ServicePrincipal" if _is_deployer(r, a) else str(a.inputs["principalType"]),
            str(a.inputs["roleDefinitionId"]).rsplit("/", 1)[-1],
        )
        for r in ci_stacks.values()
        for a in r.of_type(ROLE_ASSIGNMENT)
    }
    allowed = {(principal, guid) for principal, guids in deploy_identity.ASSIGNABLE.items() for guid in guids}
    assert allowed == rendered, (
        f"never assigned, yet allowed: {sorted(allowed - rendered)}; "
        f"assigned, yet refused: {sorted(rendered - allowed)}"
    )


@pytest.mark.parametrize(
    ("why", "access"),
    [
        (
            "Owner to a service principal code on main controls",
            role_assignment_write(ROLE_DEFINITIONS + OWNER, "ServicePrincipal"),
        ),
        ("Owner to a user", role_assignment_write(ROLE_DEFINITIONS + OWNER, "User")),
        (
            "User Access Administrator to a group",
            role_assignment_write(ROLE_DEFINITIONS + USER_ACCESS_ADMINISTRATOR, "Group"),
        ),
        (
            "its own role again, unconditioned",
            role_assignment_write(ROLE_DEFINITIONS + deploy_identity.RBAC_ADMINISTRATOR, "ServicePrincipal"),
        ),
        ("Contributor to a user", role_assignment_write(ROLE_DEFINITIONS + deploy_identity.CONTRIBUTOR, "User")),
        ("a role the platform assigns, to a user", role_assignment_write(ROLE_DEFINITIONS + roles.ACR_PULL, "User")),
        (
            "a group's role, to a service principal",
            role_assignment_write(ROLE_DEFINITIONS + roles.GRAFANA_VIEWER, "ServicePrincipal"),
        ),
        ("removing an administrator's Owner grant", role_assignment_delete(ROLE_DEFINITIONS + OWNER, "User")),
        (
            "removing a user's grant of a platform role",
            role_assignment_delete(ROLE_DEFINITIONS + roles.GRAFANA_VIEWER, "User"),
        ),
    ],
)
def test_the_condition_refuses_what_the_platform_never_assigns(ci_condition: str, why: str, access: Access) -> None:
    assert not allows(ci_condition, access), f"{why}: the deploy identity must not be able to"


def test_the_condition_leaves_every_other_action_to_the_roles_own_permissions(ci_condition: str) -> None:
    assert allows(ci_condition, Access("Microsoft.Authorization/roleAssignments/read")), "reads are not constrained"


@pytest.mark.parametrize(
    ("condition", "says"),
    [
        (
            f"@Request[{ATTRIBUTE_PREFIX}RoleDefinitionId] ForAnyOfAnyValues:GuidEquals {{acr-pull}}",
            "not a GUID",
        ),
        (
            f"@Request[{ATTRIBUTE_PREFIX}PrincipalType] ForAnyOfAnyValues:StringEqualsIgnoreCase {{'Robot'}}",
            "not values",
        ),
        ("!(ActionMatches{'a'}) OR !(ActionMatches{'b'}) AND !(ActionMatches{'c'})", "parentheses"),
    ],
)
def test_the_condition_model_refuses_what_azure_refuses(condition: str, says: str) -> None:
    with pytest.raises(ConditionError, match=says):
        allows(condition, Access("Microsoft.Authorization/roleAssignments/write"))


def test_the_check_takes_an_assignment_without_principal_type_as_arm_does(ci_stacks: dict[str, Recording]) -> None:
    """ARM assumes `User` when a role assignment leaves `principalType` out (RoleAssignment REST spec,
    stable/2022-04-01); the condition refuses any role to a user, so `--check` must name such an assignment before CI
    meets a 403."""
    recording = copy.deepcopy(ci_stacks["dev"])
    (kubelet,) = [a for a in recording.of_type(ROLE_ASSIGNMENT) if a.name.endswith("kubelet-acr-pull")]
    assert deploy_identity.refused(recording) == [], "as rendered, every assignment names its principal type"
    del kubelet.inputs["principalType"]
    assert deploy_identity.refused(recording) == [f"{kubelet.name}: AcrPull to a User"], (
        "left to ARM's default the kubelet's AcrPull is a user's grant, which the condition refuses"
    )


def test_the_check_names_an_assignment_to_a_role_the_program_defines_itself() -> None:
    """AMD pools define their own role (the driver registry's password issuer): no constrained identity creates it."""
    found = deploy_identity.refused(run_stack("dev", amd_variant()))
    assert any("password-issuer" in line and "defines itself" in line for line in found), found


# --- the Azure Policy add-on enforces the pod security baseline, and never on the platform's own agents ------------

POD_SECURITY_STACKS = ("dev", "prod", "fleet", *VARIANTS, "amd")
PRIVILEGED = {"containers": [{"name": "c", "image": "i", "securityContext": {"privileged": True}}]}


def _with_capability(*capabilities: str) -> dict[str, Any]:
    return {"containers": [{"name": "nccl", "image": "i", "securityContext": {"capabilities": {"add": capabilities}}}]}


@pytest.fixture(scope="module")
def policy_stacks(ci_stacks: dict[str, Recording]) -> dict[str, Recording]:
    variants = {name: run_stack("dev", variant_config(name)) for name in VARIANTS}
    return {**ci_stacks, **variants, "amd": run_stack("dev", amd_variant())}


def _clusters(recording: Recording) -> dict[str, Any]:
    return {c.outputs["id"]: c for c in recording.of_type(CLUSTER)}


@pytest.mark.parametrize(("stack", "effect"), [("dev", "Audit"), ("prod", "Deny"), ("fleet", "Audit")])
def test_the_pod_security_initiative_is_assigned_to_each_platform_cluster(
    policy_stacks: dict[str, Recording], stack: str, effect: str
) -> None:
    recording = policy_stacks[stack]
    initiative = [a for a in recording.of_type(POLICY_ASSIGNMENT) if a.inputs["policyDefinitionId"] == INITIATIVE["id"]]
    members = [c for c in _clusters(recording).values() if "manager" not in c.name]
    assert sorted(a.inputs["scope"] for a in initiative) == sorted(c.outputs["id"] for c in members), (
        "the add-on enforces nothing until a policy is assigned to its cluster"
    )
    for assignment in initiative:
        assert assignment.inputs["parameters"]["effect"] == {"value": effect}, "audit in dev, deny in prod"
        assert assignment.inputs["definitionVersion"].split(".")[0] == INITIATIVE["version"].split(".")[0], (
            "the initiative's major version whose policies and parameters the model follows"
        )


@pytest.mark.parametrize("stack", POD_SECURITY_STACKS)
def test_every_pod_the_platform_renders_is_admitted_by_the_pod_security_policy(
    policy_stacks: dict[str, Recording], stack: str
) -> None:
    recording = policy_stacks[stack]
    found = pod_security_assignments(recording)
    assert found, "a policy is assigned"
    refused = []
    for resource in recording.kubernetes_objects():
        kind = resource.type.rsplit(":", 1)[-1]
        if kind in POD_SPEC_PATHS:
            namespace = str(resource.inputs["metadata"].get("namespace", "default"))
            verdict = admission(found, namespace, pod_spec_at(resource.inputs, POD_SPEC_PATHS[kind]))
            refused += [f"{kind} {resource.name} in {namespace}: {v}" for v in verdict.denied + verdict.audited]
    assert not refused, (
        "the platform's own pods would be refused (Deny: their DaemonSet or Job never gets a pod) or reported "
        f"non-compliant: exclude the namespace of the component that needs host access\n{refused}"
    )
    for release in recording.of_type(RELEASE):
        namespace = str(release.inputs["namespace"])
        covering = [a.name for a in found if a.covers(namespace)]
        assert not covering, (
            f"{release.name} ({release.inputs['chart']}) installs node agents in {namespace}, which {covering} cover: "
            "their privileged and hostPath pods would be refused"
        )


@pytest.mark.parametrize("stack", POD_SECURITY_STACKS)
def test_no_team_namespace_escapes_the_pod_security_policy(policy_stacks: dict[str, Recording], stack: str) -> None:
    recording = policy_stacks[stack]
    found = pod_security_assignments(recording)
    teams = {
        str(r.inputs["metadata"]["name"])
        for r in recording.kubernetes_objects()
        if r.type == "kubernetes:core/v1:Namespace" and str(r.inputs["metadata"]["name"]).startswith("team-")
    }
    assert teams
    for namespace in teams:
        verdict = admission(found, namespace, PRIVILEGED)
        assert verdict.denied or verdict.audited, f"{namespace}: a privileged pod there is neither refused nor seen"
        if stack == "prod":
            assert verdict.denied, f"{namespace}: prod refuses a privileged team pod"


def _enforced_level(recording: Recording, namespace: str) -> str:
    (found,) = [
        r
        for r in recording.kubernetes_objects()
        if r.type == "kubernetes:core/v1:Namespace" and r.inputs["metadata"]["name"] == namespace
    ]
    return enforced_level(found.inputs["metadata"].get("labels") or {})


def _refusals(recording: Recording, namespace: str, spec: dict[str, Any]) -> list[str]:
    """Why a pod is refused in `namespace`: by the API server's Pod Security admission, then by Azure Policy."""
    verdict = admission(pod_security_assignments(recording), namespace, spec)
    return pss_violations(_enforced_level(recording, namespace), spec) + verdict.denied


HOST_ACCESS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("privileged", PRIVILEGED),
    ("SYS_ADMIN", _with_capability("IPC_LOCK", "SYS_ADMIN")),
    ("hostPath", {"containers": [{"name": "c", "image": "i"}], "volumes": [{"name": "v", "hostPath": {"path": "/"}}]}),
    ("hostNetwork", {"containers": [{"name": "c", "image": "i"}], "hostNetwork": True}),
)


def test_rdma_teams_may_lock_memory_and_nothing_more(policy_stacks: dict[str, Recording]) -> None:
    """NCCL over InfiniBand needs IPC_LOCK, which both the initiative's capability list and Kubernetes' baseline
    refuse: the pod must pass the API server's Pod Security admission and Azure Policy."""
    recording = policy_stacks["prod"]
    for namespace in ("team-llm", "team-vision"):  # both hold quota on prod's InfiniBand pools
        assert _refusals(recording, namespace, _with_capability("IPC_LOCK")) == [], (
            f"{namespace}: the team's NCCL job over RDMA is admitted"
        )
        for why, spec in HOST_ACCESS:
            assert _refusals(recording, namespace, spec), f"{namespace}: IPC_LOCK is the only exception ({why})"


def test_rdma_teams_stay_under_an_enforced_baseline_where_the_initiative_only_audits() -> None:
    """Outside prod the initiative audits; an RDMA namespace has no Kubernetes baseline, so its policies deny."""
    config = variant_config("infiniband")
    teams = config["aks-gpu-platform:training"]["teams"]
    teams[0]["quotas"].append({"pool": "h100ib", "gpus": 8})
    teams.append({"name": "cv", "namespace": "team-cv", "quotas": [{"pool": "gput4", "gpus": 0}]})
    recording = run_stack("dev", config)
    namespace = str(teams[0].get("namespace") or teams[0]["name"])
    assert _refusals(recording, namespace, _with_capability("IPC_LOCK")) == [], "the NCCL job is admitted"
    for why, spec in HOST_ACCESS:
        assert _refusals(recording, namespace, spec), f"{namespace}: refused in dev too ({why})"
    # A team without InfiniBand quota keeps Kubernetes' baseline: dev's initiative only audits it.
    assert pss_violations(_enforced_level(recording, "team-cv"), _with_capability("IPC_LOCK")), (
        "team-cv has no InfiniBand quota: IPC_LOCK stays refused"
    )
    for why, spec in HOST_ACCESS:
        assert _refusals(recording, "team-cv", spec), f"team-cv: refused in dev ({why})"


def test_rdma_teams_need_the_pod_security_policy(stack_config: Callable[[str], dict[str, Any]]) -> None:
    config = stack_config("prod")
    config["aks-gpu-platform:security"] = {
        **config.get("aks-gpu-platform:security", {}),
        "podSecurity": {"enabled": False},
    }
    with pytest.raises(ConfigError, match=r"security\.podSecurity\.enabled.*InfiniBand"):
        load_platform_config(settings_of(config))


def test_a_team_without_infiniband_quota_cannot_lock_memory(stack_config: Callable[[str], dict[str, Any]]) -> None:
    config = stack_config("prod")
    teams = config["aks-gpu-platform:training"]["teams"]
    teams.append({"name": "team-cv", "cohort": "gpu-teams", "quotas": [{"pool": "gpua100", "gpus": 0}]})
    found = pod_security_assignments(run_stack("prod", config))
    assert admission(found, "team-cv", _with_capability("IPC_LOCK")).denied, (
        "only teams with InfiniBand quota get IPC_LOCK"
    )
    assert not admission(found, "team-llm", _with_capability("IPC_LOCK")).denied


@pytest.mark.parametrize("stack", ["dev", "prod", "amd"])
def test_every_policy_assignment_body_matches_its_rest_spec(policy_stacks: dict[str, Recording], stack: str) -> None:
    for assignment in policy_stacks[stack].of_type(POLICY_ASSIGNMENT):
        arm = arm_resource(assignment)
        key = ("Microsoft.Authorization", "policyAssignments", arm["apiVersion"])
        assert key in ARM_SPECS, f"{key}: no spec excerpt at the API version the SDK sends"
        spec = ARM_SPECS[key]
        body = {k: v for k, v in arm["properties"].items() if k != "scope"}  # the path's {scope}
        problems = schema_problems(body, spec["definitions"][spec["body"]], spec["definitions"], "properties")
        assert not problems, f"{assignment.name}: ARM would refuse or drop {problems}"


# --- images: pulled by a digest an upstream source records, or listed with why not -------------------------------

IMAGE_STACKS = ("dev", "prod", "fleet", "gpu-operator-mig", "infiniband", "grace-blackwell", "amd", "aks-managed")


@pytest.fixture(scope="module")
def image_stacks(policy_stacks: dict[str, Recording]) -> dict[str, tuple[Recording, str]]:
    """Each stack's recording and its config as text (an image named there is the user's to pin)."""
    configs: dict[str, dict[str, Any]] = {
        "dev": load_stack_file("dev", REPO_ROOT),
        "prod": load_stack_file("prod", REPO_ROOT),
        "fleet": load_stack_file("fleet", REPO_ROOT),
        "amd": amd_variant(),
        "aks-managed": managed_config(),
        **{name: variant_config(name) for name in VARIANTS},
    }
    recordings = {**policy_stacks, "aks-managed": run_stack("dev", managed_config())}
    return {name: (recordings[name], json.dumps(configs[name])) for name in IMAGE_STACKS}


def _sourced(reference: str) -> str | None:
    """What is wrong with an upstream `repo:tag[@sha256:...]` reference: a digest no upstream source records, or a
    tag with no reason in `UNPINNED`; None when it is in the catalog."""
    tagged, _, digest = reference.partition("@")
    if not digest:
        return None if unpinned_reason(tagged) else f"{reference}: runs by tag with no reason in UNPINNED"
    recorded = PINNED.get(qualified(tagged))
    if recorded is None:
        return f"{reference}: a digest no upstream source in config/catalog/images.py records"
    return None if recorded.digest == digest else f"{reference}: not the digest {recorded.source} records"


def _images(recording: Recording) -> list[tuple[str, str, bool]]:
    """(object URN, image, set by a chart's default) for every image a rendered object runs: the pod specs, the RDMA
    plugin the network operator runs, and each release's pods as the chart at its pin renders them."""
    found: list[tuple[str, str, bool]] = []
    for resource in recording.kubernetes_objects():
        kind = resource.type.rsplit(":", 1)[-1]
        if kind == "NicClusterPolicy":
            plugin = resource.inputs["spec"]["rdmaSharedDevicePlugin"]
            found.append((resource.urn, f"{plugin['repository']}/{plugin['image']}:{plugin['version']}", False))
        if kind not in POD_SPEC_PATHS:
            continue
        spec = pod_spec_at(resource.inputs, POD_SPEC_PATHS[kind])
        containers = [*(spec.get("initContainers") or []), *spec["containers"]]
        found += [(resource.urn, str(c["image"]), False) for c in containers]
    facts, unread = release_facts(recording)
    assert not unread, f"releases no model renders: {unread}"
    urns = {r.name: r.urn for r in recording.of_type(RELEASE)}
    found += [(urns[f.release], image, True) for f in facts for pod in f.model.pods for image in pod.images]
    return found


# What a fleet's manager cluster pulls from upstream: it has no registry to pull through.
MANAGER_FROM_UPSTREAM: dict[str, str] = {
    "mcr.microsoft.com/azure-cli:*": "the fleet manager's token rotation",
    "registry.k8s.io/kueue/*": "the fleet manager's Kueue",
    "registry.k8s.io/jobset/*": "the fleet manager's JobSet",
}


def from_upstream(reference: str, in_platform: bool) -> str | None:
    """The release that pulls `reference` from upstream: its FROM_UPSTREAM entry (which `make plan` lists), or outside
    a platform its MANAGER_FROM_UPSTREAM entry; None when no entry says so."""
    entries = FROM_UPSTREAM if in_platform else {**FROM_UPSTREAM, **MANAGER_FROM_UPSTREAM}
    return next(
        (
            who
            for pattern, who in entries.items()
            if reference == pattern or (pattern.endswith("*") and reference.startswith(pattern[:-1]))
        ),
        None,
    )


@pytest.mark.parametrize("stack", IMAGE_STACKS)
def test_every_image_the_platform_runs_comes_through_its_registry_and_is_in_the_catalog(
    image_stacks: dict[str, tuple[Recording, str]], stack: str
) -> None:
    recording, config_text = image_stacks[stack]
    problems: list[str] = []
    through_registry = 0
    for urn, image, chart_default in _images(recording):
        where = urn.rsplit("::", 1)[1]
        if f'"{image}"' in config_text:
            continue  # the user's image (inference sample, verification pods, pre-pull list): theirs to place
        upstream = cached_upstream(image, recording)
        if upstream is None:
            # Outside a platform (a fleet's manager cluster) there is no registry to pull through.
            in_platform = "aks-gpu-platform:index:AksGpuPlatform" in urn
            known = from_upstream(qualified(image.partition("@")[0]), in_platform)
            if (in_platform and not chart_default) or not known:
                problems.append(f"{where}: {image} is pulled from outside the platform's registry")
                continue
            upstream = qualified(image)
        else:
            through_registry += 1
        problems += [f"{where}: {p}" for p in [_sourced(upstream)] if p]
    assert through_registry, "the stack pulls through its registry"
    assert not problems, (
        "a node pulls through the platform's registry (cache rules, config/catalog/images.py UPSTREAMS), by a digest "
        "an upstream file records, or the catalog says why not (UNPINNED, FROM_UPSTREAM):\n" + "\n".join(problems)
    )


IMAGE_SOURCES = REPO_ROOT / "tests" / "fixtures" / "images"


def _upstream_digests() -> dict[str, set[str]]:
    """reference -> digests the kept upstream excerpts record (tests/fixtures/images, each naming its file)."""
    found: dict[str, set[str]] = {}
    for path in sorted(IMAGE_SOURCES.glob("gpu-operator-*-relatedImages.json")):
        for entry in json.loads(path.read_text())["relatedImages"]:
            tagged, _, digest = str(entry["image"]).partition("@")
            if ":" in tagged.rsplit("/", 1)[-1]:
                found.setdefault(tagged, set()).add(digest)
    bom = json.loads((IMAGE_SOURCES / "agentbaker-202608.20.0-pause.json").read_text())
    per_file = [{t: set(e["repoDigests"]) for e in entries for t in e["repoTags"]} for entries in bom["files"].values()]
    for tag in set.intersection(*(set(f) for f in per_file)):
        common = set.intersection(*(f[tag] for f in per_file))  # the same on amd64 and arm64: the index
        found.setdefault(tag, set()).update(common)
    return found


def test_each_digest_is_the_one_its_upstream_source_records() -> None:
    upstream = _upstream_digests()
    for reference, image in PINNED.items():
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", image.digest), reference
        assert image.digest in upstream.get(reference, set()), (
            f"{reference}: {image.digest} is not what the kept excerpt of {image.source} records "
            f"({sorted(upstream.get(reference, []))}); a digest must be read, never typed"
        )
    operands = {image.tag for image in GPU_OPERATOR_OPERANDS.values()}
    chart_tags = {ref.rsplit(":", 1)[1] for ref in GPU_OPERATOR_CHART_OPERANDS.values() if ref not in UNPINNED}
    assert chart_tags <= operands, "the digests belong to the operand versions the pinned GPU Operator chart runs"


def test_the_security_page_lists_every_digest_and_every_image_left_on_its_tag() -> None:
    page = (REPO_ROOT / "docs" / "security.md").read_text()
    missing = [f"`{image.pinned}`" for image in PINNED.values() if f"`{image.pinned}`" not in page]
    missing += [f"`{pattern}`" for pattern in UNPINNED if f"`{pattern}`" not in page]
    assert not missing, f"docs/security.md (Image digests) must list: {missing}"


def _role_list(text: str) -> set[str]:
    return {name.strip() for name in re.split(r",\s*|\s+and\s+", text) if name.strip()}


def test_the_delivery_guide_names_the_roles_the_platform_assigns(ci_stacks: dict[str, Recording]) -> None:
    """An administrator reads docs/delivery.md to know what the deploy identity may hand out; its list must be the
    roles the program assigns, the deployer's own Grafana role included."""
    prose = " ".join((REPO_ROOT / "docs" / "delivery.md").read_text().split())
    found = re.search(
        r"service principals \((?P<who>[^)]*)\) get (?P<sp>[^;]*); Entra ID groups get (?P<groups>[^.]*)\.", prose
    )
    assert found, "docs/delivery.md lists the roles per principal type"
    rendered: dict[str, set[str]] = {"ServicePrincipal": set(), "Group": set()}
    own: set[str] = set()
    for recording in ci_stacks.values():
        for a in recording.of_type(ROLE_ASSIGNMENT):
            name = roles.ROLE_NAMES[str(a.inputs["roleDefinitionId"]).rsplit("/", 1)[-1]]
            deployer = _is_deployer(recording, a)
            rendered["ServicePrincipal" if deployer else str(a.inputs["principalType"])].add(name)
            if deployer:
                own.add(name)
    assert _role_list(found["sp"]) == rendered["ServicePrincipal"], "roles given to service principals"
    assert _role_list(found["groups"]) == rendered["Group"], "roles given to Entra ID groups"
    (own_role,) = own
    assert f"the deploy identity itself for {own_role}" in found["who"], (
        f"the deployer grants itself {own_role} on Grafana (creating teams and folder permissions needs it)"
    )
