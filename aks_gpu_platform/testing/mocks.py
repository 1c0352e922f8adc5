"""Pulumi mocks that answer as Azure would and record every registration, read and invoke.

Each registration echoes its inputs and adds what Azure computes (resource IDs in a made-up
subscription, principal and client IDs, the cluster's OIDC issuer and FQDN, the registry's login
server, the Lustre management address, ...), so a program that wires one resource's output into
another can be checked by value. Every value only the mocks made up is noted in the recording.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import pulumi
import yaml
from pulumi.runtime import mocks as pulumi_mocks

from .arm_paths import own_name_input
from .recording import RecordedResource, Recording
from .transforms import EngineTransforms

SUBSCRIPTION = "00000000-0000-4000-8000-00000000c0de"
TENANT = "00000000-0000-4000-8000-0000000000fe"


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


def _access_token(audience: str) -> str:
    """An unsigned JWT shaped like the app-only Entra ID token a CI deploy (a service principal) is issued."""
    claims = {
        "aud": audience,
        "appid": _guid("deployer/client"),
        "idtyp": "app",
        "oid": _guid("deployer/object"),
        "tid": TENANT,
    }

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value, sort_keys=True).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.mock-signature"


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


def _public_ip_outputs(args: pulumi_mocks.MockResourceArgs) -> dict[str, Any]:
    # Azure allocates a static address from its own public ranges when the IP is created.
    digest = hashlib.sha256(_azure_name(args).encode()).digest()
    return {"ipAddress": f"20.{digest[0]}.{digest[1]}.{1 + digest[2] % 250}"}


def _registry_outputs(args: pulumi_mocks.MockResourceArgs) -> dict[str, Any]:
    return {"loginServer": f"{str(args.inputs.get('registryName', args.name)).lower()}.azurecr.io"}


# Outputs Azure derives from the request alone, the same in a real deployment: not made up, so shown as they are.
# ACR's login server is the registry name in lower case under azurecr.io (the API version this provider pins has
# no domain name label scope that would add a hash).
DERIVED_OUTPUTS: dict[str, frozenset[str]] = {"azure-native:containerregistry:Registry": frozenset({"loginServer"})}


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


def _grafana_team_outputs(args: pulumi_mocks.MockResourceArgs) -> dict[str, Any]:
    """Grafana numbers a new team; the number stands in folder permissions."""
    return {"teamId": int(hashlib.sha256(str(args.inputs.get("name", args.name)).encode()).hexdigest()[:6], 16)}


# Outputs Azure (and Grafana) compute, per resource type, so wiring can be checked by value.
COMPUTED_OUTPUTS: dict[str, Callable[[pulumi_mocks.MockResourceArgs], dict[str, Any]]] = {
    "azure-native:containerservice:ManagedCluster": _cluster_outputs,
    "azure-native:managedidentity:UserAssignedIdentity": lambda a: _identity_outputs(_azure_name(a)),
    "azure-native:containerservice:AgentPool": _agent_pool_outputs,
    "azure-native:containerregistry:Registry": _registry_outputs,
    "azure-native:network:PublicIPAddress": _public_ip_outputs,
    "azure-native:monitor:AzureMonitorWorkspace": _monitor_workspace_outputs,
    "azure-native:dashboard:Grafana": _grafana_outputs,
    "azure-native:storagecache:AmlFilesystem": _aml_filesystem_outputs,
    "azure-native:netapp:CapacityPoolVolume": _netapp_volume_outputs,
    "grafana:oss/team:Team": _grafana_team_outputs,
}


def _azure_name(args: pulumi_mocks.MockResourceArgs) -> str:
    """The resource's Azure name: the input naming it (its last ARM path parameter), else the logical name."""
    kind = args.typ.rsplit(":", 1)[-1]
    keys = [key for key in (own_name_input(args.typ), "resourceName", f"{kind[0].lower()}{kind[1:]}Name") if key]
    return str(next((args.inputs[key] for key in keys if args.inputs.get(key)), args.name))


def _azure_id(args: pulumi_mocks.MockResourceArgs) -> str:
    _, module, kind = args.typ.split(":")
    group = args.inputs.get("resourceGroupName", "rg")
    provider = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{group}/providers/Microsoft.{module}"
    if args.typ == "azure-native:storage:BlobContainer" and args.inputs.get("accountName"):
        # A container's ID nests under its account's, as ARM gives it: a scope cut back to the account shows.
        account, container = args.inputs["accountName"], args.inputs.get("containerName", _azure_name(args))
        return f"{provider}/storageAccounts/{account}/blobServices/default/containers/{container}"
    return f"{provider}/{kind}/{_azure_name(args)}"


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
        derived = DERIVED_OUTPUTS.get(args.typ, frozenset())
        for path, text in _string_leaves(_plain(outputs)):
            if text not in given and path not in derived:
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
            token = _access_token(args.args.get("endpoint", "https://management.azure.com"))
            self.recording.note_mock_value(token, f"{function}.token")
            return {"token": token}, []
        return {}, []


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """Captures resource options (protect, ignoreChanges, dependencies...) that Mocks never sees, after running the
    transforms the engine would run on each registration (transforms.py)."""

    def __init__(self, mocks: RecordingMocks) -> None:
        super().__init__(mocks)
        self.recording = mocks.recording
        self.transforms = EngineTransforms()

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
        request = self.transforms.apply(request)
        response = super().RegisterResource(request)
        self.transforms.remember(response.urn, request)
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
