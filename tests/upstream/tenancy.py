"""What a member of team A can do on a cluster, from the objects a stack renders: the tenancy contract's model.

A world is one cluster's rendered objects. An attempt by a member of A goes through every layer that decides it,
each modelled after its upstream and each answering with the rule that refused it:

- the API request: Kubernetes RBAC and Azure RBAC (tests/upstream/rbac.py), for the groups a member's token carries;
- a pod reaching the API server (whoever creates it: the Job controller for a team's Job): the namespace's Pod
  Security level (kubernetes/pod-security-admission v0.36.2 policy/check_*.go, the baseline checks the attempts
  touch: privileged, host namespaces, hostPath volumes, host ports, seccomp, AppArmor, procMount, sysctls), every
  ValidatingAdmissionPolicy whose binding selects the namespace (CEL evaluated by tests/upstream/admission_cel.py),
  and the namespace's ResourceQuotas with a PriorityClass scope (kubernetes pkg/quota/v1/evaluator/core/pods.go
  podMatchesScopeFunc: `In` over the pod's priorityClassName; a pod matched by a quota whose `hard.pods` it would
  exceed is refused);
- a connection from a team pod: NetworkPolicy (networking.k8s.io/v1) with Cilium's semantics
  (components/network/policies.py): an `ipBlock` selects only addresses outside the cluster; pods are selected by
  namespace and labels; nodes by nothing a Kubernetes NetworkPolicy can write, so a pod under an egress policy
  does not reach node ports. Ingress from the node itself (kubelet probes) is not modelled: Cilium admits it.

Rules are named `<kind> <namespace>/<name>` (a policy validation: `... #<index>`), so an attempt states the rules
that must refuse it and a test can remove any one rule and see a case fail. Each refusal also carries its grounds:
the boundary rules (as `boundary_rules` in the test names them) any one of which, removed or widened alone, withdraws
it. Every layer is evaluated whole (every validation, every policy, every binding), so one evaluation of an attempt
answers what removing each rule would do to it. Storage attempts (a claim on a shared
class, another team's Lustre directory) are rows of the same table, with the storage layer added to `refusals`.
"""

from __future__ import annotations

import copy
import ipaddress
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aks_gpu_platform.testing import Recording, kubernetes_object
from tests.upstream import admission_cel
from tests.upstream import pod_security_policy as pod_security_policy_model
from tests.upstream.rbac import Request, allowed
from tests.upstream.reachability import private_endpoint_addresses

RBAC_PREFIX = "kubernetes:rbac.authorization.k8s.io/v1:"
ASSIGNMENT = "azure-native:authorization:RoleAssignment"
CLUSTER = "azure-native:containerservice:ManagedCluster"
RELEASE = "kubernetes:helm.sh/v3:Release"
PSS_ENFORCE = "pod-security.kubernetes.io/enforce"
SUBNET = "azure-native:network:Subnet"
LUSTRE = "azure-native:storagecache:AmlFilesystem"
NETAPP_VOLUME = "azure-native:netapp:CapacityPoolVolume"


@dataclass
class World:
    """One cluster's rendered objects, and who is in which team there."""

    objects: list[dict[str, Any]]
    assignments: list[dict[str, Any]]
    cluster_id: str
    teams: dict[str, tuple[str, set[str]]]
    """Team -> (namespace, the groups its members' tokens carry)."""
    namespaces: frozenset[str] = frozenset()
    """Every namespace the stack creates (Namespace objects and Helm releases' namespaces)."""
    private_endpoints: tuple[tuple[str, str], ...] = ()
    """(name, address) of each private endpoint in the cluster's VNet (tests/upstream/reachability.py)."""
    policy_engine: tuple[str, str] = ("", "")
    """The cluster's (networkPolicy, networkDataplane): the model's NetworkPolicy semantics are Cilium's."""
    pod_security: tuple[pod_security_policy_model.Assignment, ...] = ()
    """The Azure Policy pod security assignments Gatekeeper enforces (tests/upstream/pod_security_policy.py)."""
    identities: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Team -> (uid, gid) its pods run as, as the `trainingTeams` output tells its members."""
    storage_servers: tuple[tuple[str, str], ...] = ()
    """(service, address) of each file server that admits clients by their address (Managed Lustre, NetApp Files):
    an address in its subnet. Pod traffic to the VNet leaves with its node's address (Azure CNI Overlay's SNAT)."""

    def of_kind(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return [
            o
            for o in self.objects
            if o.get("kind") == kind and (namespace is None or o["metadata"].get("namespace") == namespace)
        ]

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        labels = {"kubernetes.io/metadata.name": namespace}
        for ns in self.of_kind("Namespace"):
            if ns["metadata"]["name"] == namespace:
                labels |= ns["metadata"].get("labels") or {}
        return labels

    def copy(self) -> World:
        return World(
            copy.deepcopy(self.objects),
            copy.deepcopy(self.assignments),
            self.cluster_id,
            self.teams,
            self.namespaces,
            self.private_endpoints,
            self.policy_engine,
            self.pod_security,
            self.identities,
            self.storage_servers,
        )


def build_world(
    recording: Recording,
    teams: Mapping[str, tuple[str, set[str]]],
    identities: Mapping[str, tuple[int, int]] | None = None,
) -> World:
    (cluster,) = recording.of_type(CLUSTER)
    network = cluster.inputs.get("networkProfile") or {}
    objects = [kubernetes_object(r) for r in recording.kubernetes_objects()]
    releases = {str(r.inputs.get("namespace")) for r in recording.of_type(RELEASE)}
    return World(
        objects=objects,
        namespaces=frozenset(releases | {o["metadata"]["name"] for o in objects if o.get("kind") == "Namespace"}),
        private_endpoints=tuple(sorted(private_endpoint_addresses(recording).items())),
        policy_engine=(str(network.get("networkPolicy")), str(network.get("networkDataplane"))),
        pod_security=tuple(pod_security_policy_model.assignments(recording)),
        assignments=[r.inputs for r in recording.of_type(ASSIGNMENT)],
        cluster_id=str(cluster.outputs["id"]),
        teams=dict(teams),
        identities=dict(identities or {}),
        storage_servers=storage_servers(recording),
    )


def storage_servers(recording: Recording) -> tuple[tuple[str, str], ...]:
    """The file servers that trust the node subnet, each with an address of its subnet (.4, Azure's first host)."""
    prefixes = {str(s.outputs.get("id")): str(s.inputs.get("addressPrefix")) for s in recording.of_type(SUBNET)}
    found: list[tuple[str, str]] = []
    for kind, field_name in ((LUSTRE, "filesystemSubnet"), (NETAPP_VOLUME, "subnetId")):
        for server in recording.of_type(kind):
            prefix = prefixes.get(str(server.inputs.get(field_name)))
            if prefix and prefix != "None":
                found.append((server.name, str(ipaddress.ip_network(prefix)[4])))
    return tuple(sorted(found))


def rule_name(obj: Mapping[str, Any]) -> str:
    namespace = obj["metadata"].get("namespace")
    return f"{obj['kind']} {namespace + '/' if namespace else ''}{obj['metadata']['name']}"


class Refusal(str):
    """A rule that refuses an attempt (the string is its name) and `grounds`: the boundary rules any one of which,
    taken away alone, withdraws this refusal (a policy validation: itself, and its binding when no other binding
    enforces it there)."""

    grounds: frozenset[str]

    def __new__(cls, name: str, grounds: Iterable[str]) -> Refusal:
        refusal = super().__new__(cls, name)
        refusal.grounds = frozenset(grounds)
        return refusal


def pod_security_label_rule(namespace: str) -> str:
    return f"Pod Security label of {namespace}"


def azure_pod_security_rule(namespace: str) -> str:
    return f"Azure Policy pod security on {namespace}"


def widened_rule(binding: Mapping[str, Any]) -> str:
    return f"{rule_name(binding)} bound cluster-wide"


def bound_roles(objects: list[dict[str, Any]], binding: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Roles of the binding's namespace that its roleRef names."""
    namespace, name = binding["metadata"].get("namespace"), binding["roleRef"]["name"]
    return [
        o
        for o in objects
        if o.get("kind") == "Role" and o["metadata"]["name"] == name and o["metadata"].get("namespace") == namespace
    ]


def widened(objects: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    """The objects with the RoleBinding at `index` bound cluster-wide: a ClusterRoleBinding to a ClusterRole copied
    from its Role (what a binding written one level too wide grants)."""
    binding = objects[index]
    name = binding["roleRef"]["name"]
    (role,) = bound_roles(objects, binding)
    wide = {**binding, "kind": "ClusterRoleBinding", "roleRef": {**binding["roleRef"], "kind": "ClusterRole"}}
    cluster_role = {**role, "kind": "ClusterRole", "metadata": {"name": name}}
    return [*objects[:index], wide, *objects[index + 1 :], cluster_role]


# --- the API request ---------------------------------------------------------------------------------------


RBAC_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")


def api_refusals(w: World, groups: set[str], request: Request) -> list[str]:
    """`RBAC` when no grant allows the request; its grounds: each RoleBinding to a Role that, bound cluster-wide
    (`widened`), would allow it."""
    if allowed([o for o in w.objects if o.get("kind") in RBAC_KINDS], w.assignments, w.cluster_id, groups, request):
        return []
    grounds = []
    for i, binding in enumerate(w.objects):
        if binding.get("kind") != "RoleBinding" or len(bound_roles(w.objects, binding)) != 1:
            continue
        wide = [o for o in widened(w.objects, i) if o.get("kind") in RBAC_KINDS]
        if allowed(wide, w.assignments, w.cluster_id, groups, request):
            grounds.append(widened_rule(binding))
    return [Refusal("RBAC", grounds)]


# --- a pod at admission --------------------------------------------------------------------------------------


# pod-security-admission v0.36.2 baseline: policy/check_privileged.go, check_hostNamespaces.go,
# check_hostPathVolumes.go, check_hostPorts.go, check_seccompProfile_baseline.go (1.19: an explicit profile other than
# RuntimeDefault or Localhost), check_appArmorProfile.go, check_procMount_baseline.go (1.35: relaxed in a user
# namespace), check_sysctls.go (sysctlsAllowedV1Dot32). Capabilities and SELinux are left out: no attempt touches them.
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
    }
)
CONFINING = ("RuntimeDefault", "Localhost")


def baseline_violations(spec: Mapping[str, Any], annotations: Mapping[str, str] | None = None) -> list[str]:
    containers = [c for key in ("containers", "initContainers", "ephemeralContainers") for c in spec.get(key) or []]
    pod_context = spec.get("securityContext") or {}
    contexts = [("pod", pod_context), *((c["name"], c.get("securityContext") or {}) for c in containers)]
    found = [f"{c['name']}: privileged" for c in containers if (c.get("securityContext") or {}).get("privileged")]
    found += [key for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key)]
    found += [f"hostPath {v['name']}" for v in spec.get("volumes") or [] if "hostPath" in v]
    found += [f"hostPort {p['hostPort']}" for c in containers for p in c.get("ports") or [] if p.get("hostPort")]
    for field_name in ("seccompProfile", "appArmorProfile"):
        found += [
            f"{who}: {field_name} {ctx[field_name]['type']}"
            for who, ctx in contexts
            if field_name in ctx and ctx[field_name]["type"] not in CONFINING
        ]
    found += [
        f"annotation {k}={v}"
        for k, v in (annotations or {}).items()
        if k.startswith("container.apparmor.security.beta.kubernetes.io/")
        and not (v in ("", "runtime/default") or v.startswith("localhost/"))
    ]
    if spec.get("hostUsers") is not False:
        found += [
            f"{who}: procMount {ctx['procMount']}"
            for who, ctx in contexts[1:]
            if ctx.get("procMount", "Default") != "Default"
        ]
    found += [f"sysctl {x['name']}" for x in pod_context.get("sysctls") or [] if x["name"] not in SAFE_SYSCTLS]
    return found


def _selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A LabelSelector (apimachinery labels.Selector): every matchLabel and matchExpression holds; {} matches all."""
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        present, value = e["key"] in labels, labels.get(e["key"])
        ok = {
            "In": present and value in (e.get("values") or []),
            "NotIn": not present or value not in (e.get("values") or []),
            "Exists": present,
            "DoesNotExist": not present,
        }[e["operator"]]
        if not ok:
            return False
    return True


def _policy_covers(policy: Mapping[str, Any], group: str, resource: str, operation: str) -> bool:
    """A resource rule names the group, the resource (`pods/ephemeralcontainers` for that subresource: `pods` does
    not match it) and the operation."""
    return any(
        group in rule.get("apiGroups", [])
        and resource in rule.get("resources", [])
        and (operation in rule.get("operations", []) or "*" in rule.get("operations", []))
        for rule in policy["spec"]["matchConstraints"].get("resourceRules") or []
    )


def policy_refusals(
    w: World, namespace: str, obj: Mapping[str, Any], group: str, resource: str, operation: str = "CREATE"
) -> list[str]:
    """The ValidatingAdmissionPolicy validations that refuse `operation` on `obj` in `namespace` (Deny bindings)."""
    labels = w.namespace_labels(namespace)
    policies = {p["metadata"]["name"]: p for p in w.of_kind("ValidatingAdmissionPolicy")}
    enforcers: dict[str, list[str]] = {}
    for binding in w.of_kind("ValidatingAdmissionPolicyBinding"):
        spec = binding["spec"]
        policy = policies.get(spec["policyName"])
        match = spec.get("matchResources") or {}
        if policy is None or "Deny" not in spec.get("validationActions", []):
            continue
        if not _selector_matches(match.get("namespaceSelector"), labels):
            continue
        if not _policy_covers(policy, group, resource, operation):
            continue
        for index, validation in enumerate(policy["spec"]["validations"]):
            single = {**policy, "spec": {**policy["spec"], "validations": [validation]}}
            if admission_cel.verdict(single, dict(obj), operation=operation) is not None:
                enforcers.setdefault(f"{rule_name(policy)} #{index}", []).append(rule_name(binding))
    # A validation enforced through two bindings stays when one of them goes.
    return [Refusal(name, {name, *(by if len(by) == 1 else ())}) for name, by in enforcers.items()]


def quota_refusals(w: World, namespace: str, spec: Mapping[str, Any]) -> list[str]:
    """ResourceQuotas whose scope matches the pod and which hold no room for one more pod."""
    refused: list[str] = []
    for quota in w.of_kind("ResourceQuota", namespace):
        hard = quota["spec"].get("hard") or {}
        if "pods" not in hard:
            continue
        scoped = (quota["spec"].get("scopeSelector") or {}).get("matchExpressions") or []
        matches = True
        for e in scoped:
            assert e["scopeName"] == "PriorityClass", f"{rule_name(quota)}: only PriorityClass scopes are modelled"
            value = spec.get("priorityClassName")
            matches &= value in e.get("values", []) if e["operator"] == "In" else value not in e.get("values", [])
        if matches and int(hard["pods"]) < 1:
            refused.append(Refusal(rule_name(quota), [rule_name(quota)]))
    return refused


def pod_refusals(
    w: World, namespace: str, spec: Mapping[str, Any], annotations: Mapping[str, str] | None = None
) -> list[str]:
    """Why the API server refuses a pod with `spec` (and `annotations`) in `namespace` (empty: admitted)."""
    refused: list[str] = []
    level = w.namespace_labels(namespace).get(PSS_ENFORCE, "privileged")
    if level in ("baseline", "restricted") and baseline_violations(spec, annotations):
        refused.append(Refusal(f"PodSecurity {namespace}/{level}", [pod_security_label_rule(namespace)]))
    denying = [a for a in w.pod_security if pod_security_policy_model.admission([a], namespace, spec).denied]
    if denying:
        # Taking Azure Policy off a namespace takes off every assignment covering it, and so from the other
        # namespaces those assignments cover.
        covered = sorted(w.namespaces | {n for n, _ in w.teams.values()})
        grounds = [azure_pod_security_rule(n) for n in covered if all(a.covers(n) for a in denying)]
        refused.append(Refusal(f"AzurePolicy {namespace}", grounds))
    metadata = {"namespace": namespace, **({"annotations": dict(annotations)} if annotations else {})}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": dict(spec)}
    refused += policy_refusals(w, namespace, pod, "", "pods")
    refused += quota_refusals(w, namespace, spec)
    return refused


def ephemeral_container_refusals(
    w: World, namespace: str, spec: Mapping[str, Any], ephemeral: list[dict[str, Any]]
) -> list[str]:
    """Why the API server refuses adding `ephemeral` containers to a running pod with `spec` (`kubectl debug`): an
    UPDATE of the `pods/ephemeralcontainers` subresource whose object is the whole Pod with them added. Pod Security
    evaluates that subresource (pod-security-admission v0.36.2 admission/admission.go ValidatePod); Azure Policy's
    Gatekeeper on it is not modelled, so it refuses nothing here; quotas count no update."""
    pod_spec = {**spec, "ephemeralContainers": [*(spec.get("ephemeralContainers") or []), *ephemeral]}
    refused: list[str] = []
    level = w.namespace_labels(namespace).get(PSS_ENFORCE, "privileged")
    if level in ("baseline", "restricted") and baseline_violations(pod_spec):
        refused.append(Refusal(f"PodSecurity {namespace}/{level}", [pod_security_label_rule(namespace)]))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": namespace}, "spec": pod_spec}
    refused += policy_refusals(w, namespace, pod, "", "pods/ephemeralcontainers", "UPDATE")
    return refused


# --- a connection ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """Where a connection goes: a pod (namespace and labels), a node's port, or an address outside the cluster."""

    kind: str
    """`pod`, `node` or `external`."""
    port: int
    protocol: str = "TCP"
    namespace: str = ""
    labels: tuple[tuple[str, str], ...] = ()
    address: str = ""


def _ports_match(rule: Mapping[str, Any], to: Endpoint) -> bool:
    ports = rule.get("ports") or []
    return not ports or any(p.get("protocol", "TCP") == to.protocol and p.get("port") in (None, to.port) for p in ports)


def _in_block(block: Mapping[str, Any], address: str) -> bool:
    import ipaddress

    ip = ipaddress.ip_address(address)
    inside = ip in ipaddress.ip_network(block["cidr"])
    return inside and not any(ip in ipaddress.ip_network(e) for e in block.get("except") or [])


def _peer_matches(w: World, peer: Mapping[str, Any], policy_namespace: str, other: Endpoint) -> bool:
    """Does a NetworkPolicyPeer select `other` (Cilium: ipBlock only outside the cluster, see module doc)."""
    if "ipBlock" in peer:
        return other.kind == "external" and _in_block(peer["ipBlock"], other.address)
    if other.kind != "pod":
        return False
    if "namespaceSelector" in peer:
        if not _selector_matches(peer["namespaceSelector"], w.namespace_labels(other.namespace)):
            return False
    elif other.namespace != policy_namespace:
        return False
    return _selector_matches(peer.get("podSelector"), dict(other.labels))


def _policies(w: World, namespace: str, labels: Mapping[str, str], direction: str) -> list[dict[str, Any]]:
    return [
        p
        for p in w.of_kind("NetworkPolicy", namespace)
        if direction in p["spec"].get("policyTypes", ["Ingress"])
        and _selector_matches(p["spec"]["podSelector"], labels)
    ]


def connection_refusals(w: World, source: Endpoint, to: Endpoint) -> list[str]:
    """Why a connection from pod `source` to `to` is dropped: the egress side, then (to a pod) the ingress side."""
    refused: list[str] = []
    egress = _policies(w, source.namespace, dict(source.labels), "Egress")
    if egress and not any(
        _ports_match(rule, to)
        and any(_peer_matches(w, peer, p["metadata"]["namespace"], to) for peer in rule.get("to") or [{}])
        for p in egress
        for rule in p["spec"].get("egress") or []
    ):
        refused += [Refusal(rule_name(p), [rule_name(p)]) for p in egress]
    if to.kind == "pod":
        ingress = _policies(w, to.namespace, dict(to.labels), "Ingress")
        if ingress and not any(
            _ports_match(rule, to)
            and any(_peer_matches(w, peer, p["metadata"]["namespace"], source) for peer in rule.get("from") or [{}])
            for p in ingress
            for rule in p["spec"].get("ingress") or []
        ):
            refused += [Refusal(rule_name(p), [rule_name(p)]) for p in ingress]
    return refused


# --- attempts ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    """Something a member of a team tries, and the rules that must each refuse it."""

    what: str
    refusals: Callable[[World, str], list[str]]
    """The rules that refuse it, for the team named."""
    expected: Callable[[World, str], set[str]]
    """The rules that must be among them (each one a boundary the attempt proves)."""
    applies: Callable[[World, str], bool] = field(default=lambda w, team: True)


def team_pod(namespace: str, labels: Iterable[tuple[str, str]] = (("app", "train"),)) -> Endpoint:
    return Endpoint("pod", 0, namespace=namespace, labels=tuple(labels))
