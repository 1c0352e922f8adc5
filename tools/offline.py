"""Run the real stack program (or any Pulumi code) under recording mocks: no cloud, no CLI."""

from __future__ import annotations

import base64
import gc
import hashlib
import runpy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.config import set_all_config
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from .arm_paths import own_name_input
from .stack_files import REPO_ROOT, load_stack_file, to_runtime_config

PROJECT = "aks-gpu-platform"
# Shorter computed strings ("", "1") are too common to tell apart from real values.
MIN_MOCK_VALUE_LENGTH = 4
SUBSCRIPTION = "00000000-0000-4000-8000-00000000c0de"
TENANT = "00000000-0000-4000-8000-0000000000fe"


@dataclass
class RecordedResource:
    """One registration: what the program asked Pulumi to create, with its options."""

    type: str
    name: str
    urn: str
    parent: str
    custom: bool
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    protect: bool
    ignore_changes: list[str]
    replace_on_changes: list[str]
    delete_before_replace: bool
    retain_on_delete: bool
    depends_on: list[str]
    deleted_with: str
    provider: str
    aliases: list[str] = field(default_factory=list)
    """Types this resource was formerly known as (the provider SDK classes alias every older API version)."""
    alias_specs: list[dict[str, Any]] = field(default_factory=list)
    """Every alias as sent to the engine: `urn`, or `name`/`type`/`parentUrn`/`noParent` (empty = unchanged)."""
    after_create_hooks: list[str] = field(default_factory=list)
    """Resource hooks the engine runs once this resource is created, before releasing its dependents."""
    delete_before_replace_defined: bool = False
    """True when the program set `delete_before_replace` (True or False); False leaves it to the provider."""


@dataclass
class Recording:
    """Everything one program run registered and invoked, in registration order.

    Registration order follows the SDK's asyncio scheduling and differs between runs; anything
    printed or written should use `in_urn_order()`.
    """

    resources: list[RecordedResource] = field(default_factory=list)
    invokes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    stack_outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: set[str] = field(default_factory=set)
    mock_values: dict[str, str] = field(default_factory=dict)
    """Strings only the mocks made up (IDs, addresses, GUIDs, endpoints) -> where each came from,
    e.g. `monitoring-workspace.metrics.prometheusQueryEndpoint`. A real deployment has other values."""

    def in_urn_order(self) -> list[RecordedResource]:
        return sorted(self.resources, key=lambda r: r.urn)

    def note_mock_value(self, value: str, origin: str) -> None:
        """Remember a made-up value; of several origins the smallest wins, so runs agree."""
        if len(value) < MIN_MOCK_VALUE_LENGTH:
            return
        known = self.mock_values.get(value)
        if known is None or origin < known:
            self.mock_values[value] = origin

    def of_type(self, type_token: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.type == type_token]

    def one(self, type_token: str, name_contains: str = "") -> RecordedResource:
        found = [r for r in self.of_type(type_token) if name_contains in r.name]
        if len(found) != 1:
            names = [r.name for r in found]
            raise AssertionError(f"expected one {type_token} named *{name_contains}*, found {names}")
        return found[0]

    def by_urn(self, urn: str) -> RecordedResource:
        for r in self.resources:
            if r.urn == urn:
                return r
        raise KeyError(urn)

    def kubernetes_objects(self) -> list[RecordedResource]:
        """Plain Kubernetes objects (not Helm releases, not providers)."""
        return [
            r
            for r in self.resources
            if r.type.startswith("kubernetes:")
            and r.custom
            and "helm.sh" not in r.type
            and r.type != "pulumi:providers:kubernetes"
        ]


def _fake_kubeconfig(server: str) -> str:
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "aks", "cluster": {"server": server, "certificate-authority-data": "Q0E="}}],
        "contexts": [{"name": "aks", "context": {"cluster": "aks", "user": "clusterUser"}}],
        "current-context": "aks",
        "users": [
            {
                "name": "clusterUser",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "kubelogin",
                        "args": [
                            "get-token",
                            "--environment",
                            "AzurePublicCloud",
                            "--server-id",
                            "6dae42f8-4368-4678-94ff-3960e28e3630",
                            "--client-id",
                            "80faf920-1908-4b52-b5ef-a8e7bedfc67a",
                            "--tenant-id",
                            TENANT,
                            "--login",
                            "devicecode",
                        ],
                        "interactiveMode": "IfAvailable",
                    }
                },
            }
        ],
    }
    return yaml.safe_dump(document)


def _guid(seed: str) -> str:
    h = hashlib.sha256(seed.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def _identity_outputs(name: str) -> dict[str, Any]:
    return {"principalId": _guid(name + "/principal"), "clientId": _guid(name + "/client"), "tenantId": TENANT}


def _cluster_outputs(args: pulumi_mocks.MockResourceArgs) -> dict[str, Any]:
    name = args.inputs.get("resourceName", args.name)
    # Azure reports a brought kubelet identity as given; without one, AKS creates its own in the node group.
    kubelet = (args.inputs.get("identityProfile") or {}).get("kubeletidentity") or {
        "resourceId": f"/subscriptions/{SUBSCRIPTION}/resourcegroups/mc/providers"
        f"/Microsoft.ManagedIdentity/userAssignedIdentities/{name}-kubelet",
        "objectId": _guid(name + "/kubelet-object"),
        "clientId": _guid(name + "/kubelet-client"),
    }
    identity = dict(args.inputs.get("identity", {}))
    # Azure answers with a map keyed by identity ID where the request sends a list.
    identity["userAssignedIdentities"] = {
        i: {"principalId": _guid(i), "clientId": _guid(i + "/c")} for i in identity.get("userAssignedIdentities", [])
    }
    return {
        "identity": identity,
        "fqdn": f"{name}.hcp.koreacentral.azmk8s.io",
        "oidcIssuerProfile": {
            **args.inputs.get("oidcIssuerProfile", {}),
            "issuerURL": f"https://koreacentral.oic.prod-aks.azure.com/{TENANT}/{_guid(name)}/",
        },
        "identityProfile": {"kubeletidentity": kubelet},
        "nodeResourceGroup": f"MC_{name}",
        "currentKubernetesVersion": args.inputs.get("kubernetesVersion", "1.33.0"),
    }


def _aml_filesystem_outputs(args: pulumi_mocks.MockResourceArgs) -> dict[str, Any]:
    # Clients mount the management service at an address of the filesystem's subnet.
    digest = hashlib.sha256(str(args.inputs.get("filesystemSubnet", args.name)).encode()).digest()
    mgs = f"10.{digest[0]}.{digest[1]}.4"
    sku = str((args.inputs.get("sku") or {}).get("name", "AMLFS-Durable-Premium-0"))
    capacity = float(args.inputs.get("storageCapacityTiB", 0))
    identity = dict(args.inputs.get("identity") or {})
    # Azure answers with a map keyed by identity ID where the request sends a list.
    identity["userAssignedIdentities"] = {
        i: {"principalId": _guid(i)} for i in identity.get("userAssignedIdentities", [])
    }
    return {
        "identity": identity,
        "clientInfo": {
            "mgsAddress": mgs,
            "mountCommand": f"mount -t lustre -o noatime,flock {mgs}@tcp:/lustrefs /lustrefs",
            "lustreVersion": "2.15.7",
            "containerStorageInterface": {"persistentVolume": "", "persistentVolumeClaim": "", "storageClass": ""},
        },
        "throughputProvisionedMBps": int(capacity * int(sku.rsplit("-", 1)[-1])),
    }


def _netapp_volume_outputs(args: pulumi_mocks.MockResourceArgs) -> dict[str, Any]:
    # Azure gives each volume a mount target: an address in the delegated subnet that clients mount.
    digest = hashlib.sha256(f"{args.inputs.get('subnetId', '')}/{args.name}".encode()).digest()
    address = f"10.{digest[0]}.{digest[1]}.{4 + digest[2] % 200}"
    token = args.inputs.get("creationToken", args.name)
    return {
        "mountTargets": [{"ipAddress": address, "fileSystemId": _guid(str(token)), "mountTargetId": _guid(address)}]
    }


def _agent_pool_outputs(args: pulumi_mocks.MockResourceArgs) -> dict[str, Any]:
    # An AgentPool's `name` is its pool name, not the cluster name in `resourceName`.
    return {"name": args.inputs.get("agentPoolName", args.name)}


def _registry_outputs(args: pulumi_mocks.MockResourceArgs) -> dict[str, Any]:
    return {"loginServer": f"{str(args.inputs.get('registryName', args.name)).lower()}.azurecr.io"}


def _monitor_workspace_outputs(args: pulumi_mocks.MockResourceArgs) -> dict[str, Any]:
    name = str(args.inputs.get("azureMonitorWorkspaceName", args.name)).lower()
    return {
        "metrics": {
            "internalId": _guid(name + "/metrics"),
            "prometheusQueryEndpoint": f"https://{name}-{_guid(name)[:4]}.koreacentral.prometheus.monitor.azure.com",
        }
    }


def _grafana_outputs(args: pulumi_mocks.MockResourceArgs) -> dict[str, Any]:
    name = args.inputs.get("workspaceName", args.name)
    return {
        "identity": {**args.inputs.get("identity", {}), "principalId": _guid(name + "/grafana"), "tenantId": TENANT},
        "properties": {**args.inputs.get("properties", {}), "endpoint": f"https://{name}-abcd.krc.grafana.azure.com"},
    }


# Outputs Azure computes, per resource type, so wiring can be checked by value.
COMPUTED_OUTPUTS: dict[str, Callable[[pulumi_mocks.MockResourceArgs], dict[str, Any]]] = {
    "azure-native:containerservice:ManagedCluster": _cluster_outputs,
    "azure-native:managedidentity:UserAssignedIdentity": lambda a: _identity_outputs(_azure_name(a)),
    "azure-native:containerservice:AgentPool": _agent_pool_outputs,
    "azure-native:containerregistry:Registry": _registry_outputs,
    "azure-native:monitor:AzureMonitorWorkspace": _monitor_workspace_outputs,
    "azure-native:dashboard:Grafana": _grafana_outputs,
    "azure-native:storagecache:AmlFilesystem": _aml_filesystem_outputs,
    "azure-native:netapp:CapacityPoolVolume": _netapp_volume_outputs,
}


def _azure_name(args: pulumi_mocks.MockResourceArgs) -> str:
    """The resource's Azure name: the input naming it (its last ARM path parameter), else the logical name."""
    kind = args.typ.rsplit(":", 1)[-1]
    keys = [key for key in (own_name_input(args.typ), "resourceName", f"{kind[0].lower()}{kind[1:]}Name") if key]
    return str(next((args.inputs[key] for key in keys if args.inputs.get(key)), args.name))


def _azure_id(args: pulumi_mocks.MockResourceArgs) -> str:
    _, module, kind = args.typ.split(":")
    group = args.inputs.get("resourceGroupName", "rg")
    return (
        f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{group}/providers/Microsoft.{module}/{kind}/{_azure_name(args)}"
    )


def _string_leaves(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, text) of every string in a nested value; map keys are not leaves."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            # A map keyed by resource ID (userAssignedIdentities) would make an unreadable origin.
            segment = "[*]" if "/" in str(key) else str(key)
            yield from _string_leaves(item, f"{path}.{segment}" if path else segment)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _string_leaves(item, f"{path}[{index}]")


class RecordingMocks(pulumi.runtime.Mocks):
    """Mocks that echo inputs, add the outputs Azure would compute, and record everything."""

    def __init__(self, recording: Recording, stack_references: dict[str, dict[str, Any]] | None = None) -> None:
        self.recording = recording
        self.stack_references = stack_references or {}

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ == "pulumi:pulumi:StackReference":
            # The referenced stack's outputs, as `pulumi.StackReference` reads them from the engine.
            stack = args.inputs.get("name", args.name)
            if stack not in self.stack_references:
                raise KeyError(f"no mocked outputs for stack reference {stack!r}")
            return stack, {"name": stack, "outputs": self.stack_references[stack], "secretOutputNames": []}
        outputs = dict(args.inputs)
        if args.typ.startswith("azure-native:"):
            resource_id = _azure_id(args)
            # Azure answers with the name the request carried; with none, Pulumi auto-names at deploy.
            outputs.setdefault("name", _azure_name(args))
            outputs["id"] = resource_id
        else:
            resource_id = f"{args.name}-id"
        computed = COMPUTED_OUTPUTS.get(args.typ)
        if computed is not None:
            outputs.update(computed(args))
        self._note_made_up(args, outputs)
        return resource_id, outputs

    def _note_made_up(self, args: pulumi_mocks.MockResourceArgs, outputs: dict[str, Any]) -> None:
        """Output strings that no input carried exist only under these mocks."""
        given = {text for _, text in _string_leaves(_plain(args.inputs))}
        for path, text in _string_leaves(_plain(outputs)):
            if text not in given:
                self.recording.note_mock_value(text, f"{args.name}.{path}")

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        self.recording.invokes.append((args.token, dict(args.args)))
        function = args.token.rsplit(":", 1)[-1]
        if args.token == "azure-native:containerservice:listManagedClusterUserCredentials":
            server = f"https://{args.args.get('resourceName', 'aks')}.hcp.koreacentral.azmk8s.io:443"
            self.recording.note_mock_value(server, f"{function}.server")
            value = base64.b64encode(_fake_kubeconfig(server).encode()).decode()
            return {"kubeconfigs": [{"name": "clusterUser", "value": value}]}, []
        if args.token == "azure-native:authorization:getClientConfig":
            client = {
                "clientId": _guid("deployer/client"),
                "objectId": _guid("deployer/object"),
                "subscriptionId": SUBSCRIPTION,
                "tenantId": TENANT,
            }
            for key, value in client.items():
                self.recording.note_mock_value(value, f"{function}.{key}")
            return client, []
        if args.token == "azure-native:authorization:getClientToken":
            # An access token for the endpoint asked for; a real one is a JWT of the deployer's login.
            token = f"mock-token-for-{args.args.get('endpoint', 'arm')}"
            self.recording.note_mock_value(token, f"{function}.token")
            return {"token": token}, []
        return {}, []


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """Captures resource options (protect, ignoreChanges, dependencies...) that Mocks never sees."""

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.recording = mocks.recording

    def ReadResource(self, request: Any) -> Any:
        """Reads (`StackReference`, `.get()`) are recorded as custom resources with their read state."""
        response = super().ReadResource(request)
        state = self.resources[response.urn].state
        self.recording.resources.append(
            RecordedResource(
                type=request.type,
                name=request.name,
                urn=response.urn,
                parent=request.parent,
                custom=True,
                inputs=_plain(pulumi.runtime.rpc.deserialize_properties(request.properties)),
                outputs=_plain(state),
                protect=False,
                ignore_changes=[],
                replace_on_changes=[],
                delete_before_replace=False,
                retain_on_delete=False,
                depends_on=list(request.dependencies),
                deleted_with="",
                provider=request.provider,
            )
        )
        return response

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type == "pulumi:pulumi:Stack":
            return response
        registration = self.resources.get(response.urn)
        state = registration.state if registration else {}
        inputs = pulumi.runtime.rpc.deserialize_properties(request.object) if request.custom else {}
        self.recording.resources.append(
            RecordedResource(
                type=request.type,
                name=request.name,
                urn=response.urn,
                parent=request.parent,
                custom=bool(request.custom),
                inputs=_plain(inputs),
                outputs=_plain(state),
                protect=bool(request.protect),
                ignore_changes=list(request.ignoreChanges),
                replace_on_changes=list(request.replaceOnChanges),
                delete_before_replace=bool(request.deleteBeforeReplace),
                retain_on_delete=bool(request.retainOnDelete),
                depends_on=list(request.dependencies),
                deleted_with=request.deletedWith,
                provider=request.provider,
                aliases=[a.spec.type for a in request.aliases if a.spec.type],
                alias_specs=[_alias_spec(a) for a in request.aliases],
                after_create_hooks=list(request.hooks.after_create),
                delete_before_replace_defined=bool(request.deleteBeforeReplaceDefined),
            )
        )
        return response


def _alias_spec(alias: Any) -> dict[str, Any]:
    if alias.urn:
        return {"urn": alias.urn}
    spec = alias.spec
    return {"name": spec.name, "type": spec.type, "parentUrn": spec.parentUrn, "noParent": spec.noParent}


def _plain(value: Any) -> Any:
    """Drop Pulumi's secret/unknown wrappers so tests compare plain values.

    Map keys come back sorted: the wire format is a protobuf Struct, whose map order changes
    from run to run, and everything rendered from a recording must not.
    """
    if isinstance(value, dict):
        if value.get("4dabf18193072939515e22adb298388d") == "1b47061264138c4ac30d75fd1eb44270":
            return _plain(value.get("value"))
        return {k: _plain(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # the wire format carries every number as a double
    return value


def _reset_runtime(
    recording: Recording,
    stack: str,
    preview: bool,
    project: str = PROJECT,
    stack_references: dict[str, dict[str, Any]] | None = None,
) -> None:
    pulumi_settings.set_root_resource(None)  # type: ignore[arg-type]
    # A failed earlier run leaves failed RPCs and outputs behind; they must not re-raise in this one.
    pulumi_settings._get_rpc_manager().clear()
    pulumi_settings.SETTINGS.outputs.clear()  # pyright: ignore[reportAttributeAccessIssue]
    mocks = RecordingMocks(recording, stack_references)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=RecordingMonitor(mocks))


def run_under_mocks(
    program: Callable[[], Any],
    config: dict[str, str] | None = None,
    stack: str = "test",
    preview: bool = False,
    secret_keys: list[str] | None = None,
    project: str = PROJECT,
    stack_references: dict[str, dict[str, Any]] | None = None,
) -> Recording:
    """Run `program` against fresh mocks and return what it registered and exported.

    `stack_references` maps a referenced stack's name to the outputs it exports.
    """
    recording = Recording()
    _reset_runtime(recording, stack, preview, project, stack_references)
    set_all_config(config or {}, secret_keys or [])
    with _cyclic_gc_paused():
        _sync_await(run_pulumi_func(program))
        root = pulumi_settings.get_root_resource()
        outputs = getattr(root, "outputs", {}) or {}
        for key, value in outputs.items():
            output = pulumi.Output.from_input(value)
            recording.stack_outputs[key] = _sync_await(output.future())
            if _sync_await(output.is_secret()):
                recording.secret_outputs.add(key)
    return recording


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Run one evaluation without the cyclic garbage collector, then collect its garbage once.

    The SDK leaves some 3x10^5 objects in reference cycles per evaluation (futures, tasks,
    coroutines, Outputs); with the collector on they trigger full collections that walk every
    imported SDK module each time (five of about 0.5 s on the large bench config, over half the
    evaluation). Paused, one young-generation collection at the end frees the same cycles:
    a few MiB more at peak, for evaluations about twice as fast.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.collect(1)  # what the evaluation allocated is young; older runs' leftovers sit in generation 1
        if enabled:
            gc.enable()


def run_stack(
    stack: str,
    config: dict[str, Any] | None = None,
    root: Path = REPO_ROOT,
    preview: bool = False,
) -> Recording:
    """Evaluate `__main__.py` with `Pulumi.<stack>.yaml` (or `config`, YAML-shaped) under mocks."""
    stack_config = load_stack_file(stack, root) if config is None else config
    encoded, secret_keys = to_runtime_config(stack_config, PROJECT)
    entry = str(root / "__main__.py")
    return run_under_mocks(
        lambda: runpy.run_path(entry, run_name="__main__"),
        config=encoded,
        stack=stack,
        preview=preview,
        secret_keys=secret_keys,
    )
