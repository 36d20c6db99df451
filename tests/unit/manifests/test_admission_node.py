"""On its own Node the agent changes only the keys it owns: the shipped admission policy
(``kubectl kustomize`` of the base and of each overlay) run in a CEL interpreter
(``tests/harness/admission.py``) against Node updates as the API server hands them to
admission, the Node after the patch and before it.

The agent's writes are its own: each is made by its patch builders (swap labels, shutdown
taint, readiness gate) through its ``NodePatcher``, guard and ownership check included, on a
Node that carries an operator's labels, annotations and taints, as the agent configured by
the rendered ConfigMap owns keys. So a write the agent starts to make that the policy would
refuse fails here, not in a cluster. Everything else is refused, added, changed or removed,
on its own Node and on another: the labels, taints and ownerReferences upstream's
NodeRestriction keeps from a kubelet, every other label, annotation and taint, the
descheduler's own keys, and the rest of the Node.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import os
import re
import subprocess
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from agent.config import AgentConfig
from agent.daemon import owned_node_keys
from agent.kube import ownedtaints
from agent.kube.patches import Builder, NodePatcher
from agent.kube.resources import NODES
from agent.kubesemantics.nodekeys import RESCUE_TAINT_KEY
from agent.kubesemantics.taintownership import (
    OWNED_ANNOTATIONS,
    OwnedTaint,
    emptying_taint,
    out_of_service_taint,
    rescue_taint,
)
from agent.readiness import node_writes
from agent.readiness.presets import PRESETS, gate_keys
from agent.shutdown.taint import add_taint, remove_taint
from agent.swap.labels import swap_node_builder
from tests.harness import kubeobjects
from tests.harness.admission import Admission, Request, User, service_account
from tests.harness.fake_apiserver.patches import apply_json_patch
from tests.harness.kustomize import (
    AGENT_ACCOUNT,
    AGENT_CONFIG,
    BASE,
    JSON,
    NAMESPACE,
    agent_config,
    need_kubectl,
    one,
    render,
    target_id,
    targets,
)
from tests.harness.repository import DOCS, REPO
from tests.unit.manifests.test_validate import KUBERNETES_VERSION

POLICY = "kubelet-companion-own-node-only"
UID_A, UID_B = "0b5e3a49-6a53-4d4b-9c3e-0000000000aa", "0b5e3a49-6a53-4d4b-9c3e-0000000000bb"
POD_TOKEN_A = service_account(
    NAMESPACE, AGENT_ACCOUNT, node="node-a", node_uid=UID_A, pod="kubelet-companion-agent-x7k2p"
)
"""node-a's agent (each kind of credential: test_admission.py)."""
COMPLETED_AT = "2026-05-01T10:00:00Z"
TARGETS = [pytest.param(path, id=target_id(path)) for path in targets()]
AGENT = REPO / "agent"
PERMISSIONS_PAGE = DOCS / "permissions.md"

# Why each kind of change is refused on the agent's own Node (a part of each message).
LABELS, ANNOTATIONS, TAINTS = "own labels", "own annotations", "own taints"
OWNERS, REST = "ownerReferences", "finalizers or spec"
OTHER_NODE = "only its own Node"


@pytest.fixture(scope="module")
def admission() -> Admission:
    """The base's policies, as the API server enforces them."""
    return Admission(render())


# -- the Node as an operator left it ------------------------------------------------------

OPERATOR_LABELS = {
    "node-role.kubernetes.io/worker": "",
    "node-restriction.kubernetes.io/trusted": "yes",
    "pci.node-restriction.kubernetes.io/tier": "gold",
    "topology.kubernetes.io/zone": "zone-1",
    "team": "db",
}
OPERATOR_ANNOTATIONS = {"node.alpha.kubernetes.io/ttl": "0", "example.com/owner": "db-team"}
DEDICATED = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
OPERATOR_TAINTS = [
    DEDICATED,
    {"key": "example.com/maintenance", "effect": "NoExecute", "timeAdded": COMPLETED_AT},
]


def busy_node(name: str = "node-a", uid: str = UID_A) -> JSON:
    """A Node with an operator's labels, annotations and taints, none of them the agent's."""
    return kubeobjects.node(
        name,
        uid=uid,
        resource_version="41",
        labels={"kubernetes.io/hostname": name, **OPERATOR_LABELS},
        annotations=OPERATOR_ANNOTATIONS,
        taints=OPERATOR_TAINTS,
    )


def update(old: JSON, new: JSON, *, subresource: str = "") -> Callable[[User], Request]:
    """The admission request of an update of ``old`` into ``new`` (a PATCH or a PUT)."""
    return lambda user: Request(
        user, "UPDATE", "", "v1", "nodes", "Node", name=new["metadata"]["name"],
        subresource=subresource, object=new, old_object=old,
    )  # fmt: skip


def elsewhere(old: JSON, new: JSON) -> tuple[JSON, JSON]:
    """The same change made to node-b."""

    def moved(node: JSON) -> JSON:
        node = copy.deepcopy(node)
        node["metadata"].update(name="node-b", uid=UID_B)
        labels = node["metadata"].get("labels") or {}
        if "kubernetes.io/hostname" in labels:
            labels["kubernetes.io/hostname"] = "node-b"
        return node

    return moved(old), moved(new)


# -- the agent's own writes, made by its own code -----------------------------------------


class _OneNode:
    """Stands in for ``AsyncKube`` with a single Node, patched as the API server patches."""

    def __init__(self, node: JSON) -> None:
        self.node = copy.deepcopy(node)

    async def get(self, resource: Any, name: str, _namespace: str | None = None) -> JSON:
        assert (resource, name) == (NODES, self.node["metadata"]["name"])
        return copy.deepcopy(self.node)

    async def patch(self, resource: Any, name: str, patch: Any, **_options: Any) -> JSON:
        assert (resource, name) == (NODES, self.node["metadata"]["name"])
        self.node = apply_json_patch(self.node, patch)
        return copy.deepcopy(self.node)


def agent_patch(config: AgentConfig, node: JSON, build: Builder) -> tuple[JSON, JSON]:
    """The Node before and after the agent's ``NodePatcher`` applies ``build`` to it, owning
    the keys the agent configured by ``config`` owns."""
    kube = _OneNode(node)
    patcher = NodePatcher(kube, node["metadata"]["name"], owned_node_keys(config))  # type: ignore[arg-type]
    asyncio.run(patcher.update(build, what="test"))
    assert kube.node != node, "the write changed nothing"
    return node, kube.node


def gate_taint_key(config: AgentConfig) -> str:
    return gate_keys(config.readiness.preset, config.readiness.taint_key).taint


def agent_writes(config: AgentConfig) -> dict[str, tuple[JSON, JSON]]:
    """Every change the agent configured by ``config`` makes to node-a: (before, after)."""
    gate = gate_taint_key(config)
    busy, bare = busy_node(), kubeobjects.node("node-a", uid=UID_A, resource_version="41")

    def write(node: JSON, build: Builder) -> tuple[JSON, JSON]:
        return agent_patch(config, node, build)

    swap_on = swap_node_builder(swap_on=True, capacity_bytes=2**31, taint=True)
    swapping = write(busy, swap_on)
    shutting_down = write(busy, add_taint)
    gated = write(busy, node_writes.add(gate))
    return {
        "swap-on": swapping,
        "swap-on-bare-node": write(bare, swap_on),
        "swap-on-untainted": write(
            busy, swap_node_builder(swap_on=True, capacity_bytes=2**31, taint=False)
        ),
        "swap-off": write(
            swapping[1], swap_node_builder(swap_on=False, capacity_bytes=0, taint=True)
        ),
        "shutdown-taint": shutting_down,
        "shutdown-taint-removed": write(shutting_down[1], remove_taint),
        "shutdown-taint-bare-node": write(bare, add_taint),
        "readiness-gate-added": gated,
        "readiness-gate-lifted": write(gated[1], node_writes.lift(gate, COMPLETED_AT)),
        "readiness-completed": write(busy, node_writes.mark_completed(COMPLETED_AT)),
    }


@dataclass(frozen=True)
class Shipped:
    """One kustomization as rendered: its policies, its agent's config, that agent's writes."""

    admission: Admission
    config: AgentConfig
    writes: dict[str, tuple[JSON, JSON]]


@functools.cache
def _configured(target: Path) -> tuple[AgentConfig, dict[str, tuple[JSON, JSON]]]:
    """``target``'s agent config and that agent's writes, made once: read-only."""
    config = agent_config(render(target))[1]
    return config, agent_writes(config)


@functools.cache
def shipped(target: Path) -> Shipped:
    """``target`` rendered once (compiling a policy's CEL takes a while): read-only."""
    return Shipped(Admission(render(target)), *_configured(target))


def _distinct_targets() -> list[Path]:
    """The kustomizations that differ in their policy or their agent's config (the others
    render the same pair, which test_overlays.py checks)."""
    seen: dict[str, Path] = {}
    for target in targets():
        docs = render(target)
        policy = json.dumps(one(docs, "ValidatingAdmissionPolicy", POLICY), sort_keys=True)
        seen.setdefault(policy + repr(agent_config(docs)[1]), target)
    return list(seen.values())


AGENT_WRITES = [
    pytest.param(target, name, id=f"{target_id(target)}-{name}")
    for target in _distinct_targets()
    for name in _configured(target)[1]
    # not shipped(target): that compiles the policy's CEL, in every worker that collects
]


@pytest.mark.parametrize(("target", "write"), AGENT_WRITES)
def test_every_change_the_agent_makes_to_its_own_node_is_admitted(target: Path, write: str) -> None:
    """In each kustomization with its own policy or agent config (the base, gardener), each
    change the agent configured by its ConfigMap makes to its Node through its own patch
    builders is admitted, on a Node that carries an operator's labels, annotations and
    taints."""
    old, new = shipped(target).writes[write]
    decision = shipped(target).admission.review(update(old, new)(POD_TOKEN_A))
    assert decision.matched == (POLICY,)
    assert decision.allowed, decision.messages


@pytest.mark.parametrize(("target", "write"), AGENT_WRITES)
def test_the_agents_own_changes_are_denied_on_another_node(target: Path, write: str) -> None:
    """The same changes, made by node-a's agent to node-b, are denied."""
    old, new = elsewhere(*shipped(target).writes[write])
    decision = shipped(target).admission.review(update(old, new)(POD_TOKEN_A))
    assert not decision.allowed
    assert any(OTHER_NODE in message for message in decision.messages), decision.messages


# -- what the agent does not own ----------------------------------------------------------


def _changed(prepare: Callable[[JSON], None], change: Callable[[JSON], None]) -> tuple[JSON, JSON]:
    """(before, after): the busy node made ready by ``prepare``, then changed by ``change``."""
    old = busy_node()
    prepare(old)
    new = copy.deepcopy(old)
    change(new)
    assert new != old
    return old, new


def _meta_map(field: str, key: str, value: str | None) -> Callable[[JSON], None]:
    """Set ``metadata.<field>[key]`` to ``value``, or drop it for ``None``."""

    def apply(node: JSON) -> None:
        entries = node["metadata"].setdefault(field, {})
        if value is None:
            entries.pop(key, None)
        else:
            entries[key] = value

    return apply


def _taints(change: Callable[[list[JSON]], list[JSON]]) -> Callable[[JSON], None]:
    def apply(node: JSON) -> None:
        node["spec"]["taints"] = change(list(node["spec"].get("taints") or []))

    return apply


def _without(taint: JSON) -> Callable[[list[JSON]], list[JSON]]:
    return lambda taints: [t for t in taints if t["key"] != taint["key"]]


def _with(taint: JSON) -> Callable[[list[JSON]], list[JSON]]:
    return lambda taints: [*_without(taint)(taints), dict(taint)]


def _map_cases(field: str, keys: list[str], reason: str) -> Iterator[Any]:
    """Each key added, its value changed, and removed."""
    for key in keys:
        for how, (before, after) in {
            "added": (None, "x"), "changed": ("x", "y"), "removed": ("x", None),
        }.items():  # fmt: skip
            old, new = _changed(_meta_map(field, key, before), _meta_map(field, key, after))
            yield pytest.param(old, new, reason, id=f"{field}-{how}-{key}")


def _taint_cases(taints: list[JSON]) -> Iterator[Any]:
    """Each taint added, its value changed, its effect changed, and removed."""
    for taint in taints:
        present = _taints(_with(taint))
        effect = "NoSchedule" if taint["effect"] == "NoExecute" else "NoExecute"
        cases = {
            "added": (_taints(_without(taint)), present),
            "value-changed": (present, _taints(_with({**taint, "value": "other"}))),
            "effect-changed": (present, _taints(_with({**taint, "effect": effect}))),
            "removed": (present, _taints(_without(taint))),
        }
        for how, (before, after) in cases.items():
            old, new = _changed(before, after)
            yield pytest.param(old, new, TAINTS, id=f"taint-{how}-{taint['key']}")


OWNER = {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine", "name": "m-1", "uid": "u-1"}
OWNERS_FIELD, FINALIZERS_FIELD = ("metadata", "ownerReferences"), ("metadata", "finalizers")


def _set(path: tuple[str, ...], value: Any) -> Callable[[JSON], None]:
    """Set the field at ``path`` to ``value``, or drop it for ``None``."""

    def apply(node: JSON) -> None:
        parent = node
        for part in path[:-1]:
            parent = parent.setdefault(part, {})
        if value is None:
            parent.pop(path[-1], None)
        else:
            parent[path[-1]] = copy.deepcopy(value)

    return apply


def _nothing(_node: JSON) -> None:
    return None


REFUSED_LABELS = [
    "node-role.kubernetes.io/control-plane",
    "node-restriction.kubernetes.io/trusted",
    "pci.node-restriction.kubernetes.io/tier",
    "kubernetes.io/hostname",
    "node.kubernetes.io/exclude-from-external-load-balancers",
    "team",
    "kubelet-companion.io/critical-component",
]
"""Labels the agent does not own: kubernetes.io ones (two a kubelet may set), reserved
ones (node-restriction.kubernetes.io and a subdomain), an operator's, and one in our domain
the agent does not write."""
REFUSED_ANNOTATIONS = sorted(
    {*OWNED_ANNOTATIONS, "node.alpha.kubernetes.io/ttl", "kubelet-companion.io/anything"}
)
"""The descheduler's records of its taints, an operator's, and one in our domain."""
REFUSED_TAINTS = [
    DEDICATED,
    {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
    dict(out_of_service_taint().taint_json),
    dict(rescue_taint("kube-system/coredns-0").taint_json),
    dict(emptying_taint().taint_json),
]
"""An operator's taints, Kubernetes' own, and the descheduler's (NodeShutdownRecovery's,
CriticalAddonRescue's, HighNodeUtilization's)."""

REFUSED_CHANGES = [
    *_map_cases("labels", REFUSED_LABELS, LABELS),
    *_map_cases("annotations", REFUSED_ANNOTATIONS, ANNOTATIONS),
    *_taint_cases(REFUSED_TAINTS),
    pytest.param(
        *_changed(_nothing, _taints(lambda taints: taints[::-1])), TAINTS,
        id="taints-reordered",
    ),
    pytest.param(
        *_changed(_nothing, _set(OWNERS_FIELD, [OWNER])), OWNERS,
        id="ownerReferences-added",
    ),
    pytest.param(
        *_changed(
            _set(OWNERS_FIELD, [OWNER]),
            _set(OWNERS_FIELD, [{**OWNER, "uid": "u-2"}]),
        ),
        OWNERS, id="ownerReferences-changed",
    ),
    pytest.param(
        *_changed(_set(OWNERS_FIELD, [OWNER]), _set(OWNERS_FIELD, None)),
        OWNERS, id="ownerReferences-removed",
    ),
    pytest.param(
        *_changed(_nothing, _set(FINALIZERS_FIELD, ["example.com/keep"])), REST,
        id="finalizer-added",
    ),
    pytest.param(
        *_changed(_set(FINALIZERS_FIELD, ["example.com/keep"]), _set(FINALIZERS_FIELD, None)),
        REST, id="finalizer-removed",
    ),
    pytest.param(
        *_changed(_set(("spec", "unschedulable"), True), _set(("spec", "unschedulable"), None)),
        REST, id="uncordoned",
    ),
    pytest.param(
        *_changed(_nothing, _set(("spec", "unschedulable"), True)), REST, id="cordoned",
    ),
    pytest.param(
        *_changed(_nothing, _set(("spec", "providerID"), "aws:///eu-west-1a/i-0abc")), REST,
        id="providerID-set",
    ),
    pytest.param(
        *_changed(_nothing, _set(("spec", "podCIDR"), "10.244.7.0/24")), REST,
        id="podCIDR-set",
    ),
]  # fmt: skip
"""Changes to node-a the agent never makes: (before, after, why it is refused)."""


@pytest.mark.parametrize(("old", "new", "reason"), REFUSED_CHANGES)
def test_a_change_to_what_the_agent_does_not_own_is_refused_on_its_own_node(
    admission: Admission, old: JSON, new: JSON, reason: str
) -> None:
    """On node-a, node-a's agent may not add, change or remove a label, annotation or taint
    it does not own (kubernetes.io and reserved labels, an operator's keys, the
    descheduler's taints and records, other keys in our domain), nor change the Node's
    ownerReferences, finalizers or spec: each is denied, with the message that says why."""
    decision = admission.review(update(old, new)(POD_TOKEN_A))
    assert not decision.allowed
    assert any(reason in message for message in decision.messages), decision.messages


@pytest.mark.parametrize(("old", "new", "reason"), REFUSED_CHANGES)
def test_a_change_to_what_the_agent_does_not_own_is_refused_on_another_node(
    admission: Admission, old: JSON, new: JSON, reason: str
) -> None:
    """The same changes made by node-a's agent to node-b are denied as well."""
    decision = admission.review(update(*elsewhere(old, new))(POD_TOKEN_A))
    assert not decision.allowed
    assert any(OTHER_NODE in message for message in decision.messages), decision.messages


NODE_RESTRICTION_REFUSES = [
    pytest.param(
        *_changed(_nothing, _meta_map("labels", "node-role.kubernetes.io/control-plane", "")),
        id="control-plane-label-added",
    ),
    pytest.param(
        *_changed(_nothing, _meta_map("labels", "pci.node-restriction.kubernetes.io/tier", "x")),
        id="reserved-subdomain-label-changed",
    ),
    pytest.param(
        *_changed(_nothing, _meta_map("labels", "pci.node-restriction.kubernetes.io/new", "x")),
        id="reserved-subdomain-label-added",
    ),
    pytest.param(*_changed(_nothing, _taints(_without(DEDICATED))), id="operator-taint-lifted"),
    pytest.param(
        *_changed(_nothing, _taints(_with(dict(out_of_service_taint().taint_json)))),
        id="out-of-service-taint-added",
    ),
    pytest.param(
        *_changed(_nothing, _set(OWNERS_FIELD, [OWNER])),
        id="ownerReferences-set",
    ),
]  # fmt: skip
"""What upstream's NodeRestriction refuses a kubelet on its own Node, as reported in
issue 27 (finding 1): each was admitted for the agent before its own-Node allow-list."""


@pytest.mark.parametrize(("old", "new"), NODE_RESTRICTION_REFUSES)
def test_what_noderestriction_refuses_a_kubelet_is_refused_to_the_agent(
    admission: Admission, old: JSON, new: JSON
) -> None:
    """A control-plane label, a label under a node-restriction.kubernetes.io subdomain, an
    operator's taint lifted, the out-of-service taint added, ownerReferences set: node-a's
    agent may do none of these to node-a, as a kubelet may not."""
    decision = admission.review(update(old, new)(POD_TOKEN_A))
    assert decision.matched == (POLICY,)
    assert not decision.allowed, f"admitted: {new['metadata']} {new['spec']}"


DESCHEDULER_TAINTS = [
    pytest.param(rescue_taint("kube-system/coredns-0"), id="critical-addon-rescue"),
    pytest.param(out_of_service_taint(), id="out-of-service"),
    pytest.param(emptying_taint(), id="emptying"),
]


@pytest.mark.parametrize("owned", DESCHEDULER_TAINTS)
@pytest.mark.parametrize("how", ["added", "removed"])
def test_the_descheduler_taint_writes_are_refused_to_the_agent(
    admission: Admission, owned: OwnedTaint, how: str
) -> None:
    """The descheduler's taints and the annotations recording them, written as the
    descheduler writes them (``agent.kube.ownedtaints``), are the descheduler's alone: the
    agent's token may neither add nor remove them on its own Node."""
    node = busy_node()
    tainted = apply_json_patch(node, ownedtaints.add_ops(node, owned))
    old, new = (
        (node, tainted)
        if how == "added"
        else (tainted, apply_json_patch(tainted, ownedtaints.remove_ops(tainted, owned)))
    )
    decision = admission.review(update(old, new)(POD_TOKEN_A))
    assert not decision.allowed
    assert any(TAINTS in message for message in decision.messages), decision.messages
    assert any(ANNOTATIONS in message for message in decision.messages), decision.messages


@pytest.mark.parametrize(
    ("operation", "subresource", "reason"),
    [
        pytest.param("CREATE", "", "may not create or delete a Node", id="create"),
        pytest.param("DELETE", "", "may not create or delete a Node", id="delete"),
        pytest.param("UPDATE", "status", "never writes a Node's status", id="update-status"),
    ],
)
def test_the_agent_never_creates_deletes_or_writes_the_status_of_its_node(
    admission: Admission, operation: str, subresource: str, reason: str
) -> None:
    """Its own Node is the agent's to patch, not to create, delete or report the status of
    (that is its kubelet's): each is denied, even with nothing changed."""
    node = busy_node()
    request = Request(
        POD_TOKEN_A, operation, "", "v1", "nodes", "Node", name="node-a",
        subresource=subresource,
        object=None if operation == "DELETE" else node,
        old_object=None if operation == "CREATE" else node,
    )  # fmt: skip
    decision = admission.review(request)
    assert decision.matched == (POLICY,)
    assert not decision.allowed
    assert any(reason in message for message in decision.messages), decision.messages


@pytest.mark.parametrize("target", TARGETS)
def test_a_readiness_gate_key_not_configured_is_refused(target: Path) -> None:
    """Only the gate taint the kustomization's agent config names is admitted: the other
    preset's gate taint may not be added to node-a."""
    gate = gate_taint_key(shipped(target).config)
    for other in {keys.taint for keys in PRESETS.values()} - {gate}:
        old, new = _changed(_nothing, _taints(_with({"key": other, "effect": "NoSchedule"})))
        decision = shipped(target).admission.review(update(old, new)(POD_TOKEN_A))
        assert not decision.allowed, other


# -- the policy's lists and the agent's code ----------------------------------------------


def _changed_keys(old: JSON, new: JSON) -> dict[str, set[str]]:
    """The label, annotation and taint keys that differ between ``old`` and ``new``."""

    def map_keys(field: str) -> set[str]:
        before = old["metadata"].get(field) or {}
        after = new["metadata"].get(field) or {}
        return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}

    def taints(node: JSON) -> list[JSON]:
        return list(node["spec"].get("taints") or [])

    taint_keys = {
        str(t["key"]) for t in taints(old) + taints(new) if (t in taints(old)) != (t in taints(new))
    }
    return {"labels": map_keys("labels"), "annotations": map_keys("annotations"),
            "taints": taint_keys}  # fmt: skip


@pytest.mark.parametrize("target", TARGETS)
def test_the_policy_admits_exactly_the_keys_the_agent_writes(target: Path) -> None:
    """The policy's own-Node lists (labels, annotations, taints with the readiness gate's)
    are exactly the keys the agent's writes change, in the base and every overlay: no key
    the agent does not write, none of the descheduler's, and none a kubelet may not set."""
    written: dict[str, set[str]] = {"labels": set(), "annotations": set(), "taints": set()}
    for old, new in shipped(target).writes.values():
        for kind, keys in _changed_keys(old, new).items():
            written[kind] |= keys
    (policy,) = shipped(target).admission.policies
    listed = {
        "labels": set(policy.constant("ownLabelKeys")),
        "annotations": set(policy.constant("ownAnnotationKeys")),
        "taints": set(policy.constant("ownTaintKeys")),
    }
    assert listed == written
    descheduler = {RESCUE_TAINT_KEY, out_of_service_taint().key, emptying_taint().key}
    assert not listed["taints"] & descheduler
    assert not listed["annotations"] & OWNED_ANNOTATIONS
    for key in set().union(*listed.values()):
        prefix = key.rpartition("/")[0]
        assert not re.search(r"(^|\.)(kubernetes\.io|k8s\.io)$", prefix), key


@pytest.mark.parametrize("target", TARGETS)
def test_the_policy_names_the_readiness_taint_of_the_rendered_agent_config(
    target: Path,
) -> None:
    """Each kustomization's policy lists, as readinessTaintKeys, the gate taint of the
    agent config it ships and nothing else (the gardener overlay: Gardener's)."""
    (policy,) = shipped(target).admission.policies
    assert policy.spec["variables"][0]["name"] == "readinessTaintKeys"
    assert policy.constant("readinessTaintKeys") == [gate_taint_key(shipped(target).config)]


def test_the_policy_keeps_every_field_of_the_node_spec() -> None:
    """The policy compares every field of NodeSpec but its taints, as the release the
    manifests are validated against defines NodeSpec: a field a new release adds fails here
    until the policy keeps it too."""
    schema = (
        Path(kubernetes_validate.__file__).parent
        / "kubernetes-json-schema"
        / f"v{KUBERNETES_VERSION}-local"
        / "nodespec-v1.json"
    )
    fields = set(json.loads(schema.read_text())["properties"]) - {"taints"}
    (policy,) = shipped(BASE).admission.policies
    (rest,) = [v["expression"] for v in policy.spec["variables"] if v["name"] == "restKept"]
    assert set(re.findall(r"\bobject\.spec\.(\w+)", rest)) == fields
    assert set(re.findall(r"\boldObject\.spec\.(\w+)", rest)) == fields


_NODE_PATCH_BUILDERS = re.compile(r"\b(taint_ops|metadata_map_ops)\(|\.patch\(\s*NODES\b")
"""A call that builds or sends a Node patch."""
_AGENT_NODE_WRITERS = {"swap/labels.py", "shutdown/taint.py", "readiness/node_writes.py"}
_DESCHEDULER_NODE_WRITER = "kube/ownedtaints.py"
_IMPORTS_OWNEDTAINTS = re.compile(
    r"^\s*(from agent\.kube\.ownedtaints import|from agent\.kube import .*\bownedtaints\b)",
    re.MULTILINE,
)


def test_every_module_that_patches_a_node_is_covered_here() -> None:
    """The agent's Node writes come from the three builder modules exercised above, sent by
    ``NodePatcher`` (kube/patches.py); the descheduler's from ``ownedtaints``, which only
    agent/descheduler imports. A new module that builds Node patches fails this test until
    its writes are added above and its keys to the policy."""
    found = set()
    for path in AGENT.rglob("*.py"):
        relative = path.relative_to(AGENT).as_posix()
        if relative == "kube/patches.py" or relative.startswith("descheduler/"):
            continue
        if _NODE_PATCH_BUILDERS.search(path.read_text()):
            found.add(relative)
    assert found == _AGENT_NODE_WRITERS | {_DESCHEDULER_NODE_WRITER}
    importers = {
        path.relative_to(AGENT).as_posix()
        for path in AGENT.rglob("*.py")
        if _IMPORTS_OWNEDTAINTS.search(path.read_text())
    }
    assert {each for each in importers if not each.startswith("descheduler/")} == set()


# -- a custom readiness taint key ---------------------------------------------------------

CUSTOM_GATE = "startup-taint.cluster-autoscaler.kubernetes.io/critical-components-not-ready"
DOCUMENTED_PATCH = "<!-- readiness-taint-keys"


def _documented_patch() -> str:
    """The YAML block after the readiness-taint-keys marker in docs/permissions.md."""
    text = PERMISSIONS_PAGE.read_text()
    after = text[text.index(DOCUMENTED_PATCH) :].split("```yaml\n", 1)[1].split("```", 1)[0]
    return textwrap.dedent(after)


def _custom_kustomization(tmp_path: Path, *, patched: bool) -> list[JSON]:
    """The base with readiness.taintKey set to cluster-autoscaler's startup prefix, and the
    policy patched as docs/permissions.md says (or not)."""
    source = yaml.safe_load(one(render(), "ConfigMap", AGENT_CONFIG)["data"]["agent.yaml"])
    source.setdefault("readiness", {})["taintKey"] = CUSTOM_GATE
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(source))
    kustomization = yaml.safe_load(_documented_patch()) if patched else {}
    kustomization.update(
        resources=[os.path.relpath(BASE, tmp_path)],
        configMapGenerator=[{
            "name": AGENT_CONFIG, "namespace": NAMESPACE,
            "behavior": "replace", "files": ["agent.yaml"],
        }],
    )  # fmt: skip
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    result = subprocess.run(
        [need_kubectl(), "kustomize", str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.mark.parametrize("patched", [True, False], ids=["patched", "unpatched"])
def test_a_custom_readiness_taint_key_is_admitted_with_the_documented_patch(
    tmp_path: Path, patched: bool
) -> None:
    """With readiness.taintKey set, the agent's gate writes (adding and lifting that taint)
    are admitted once the policy's readinessTaintKeys is patched as docs/permissions.md
    shows, and denied without the patch."""
    docs = _custom_kustomization(tmp_path, patched=patched)
    config = agent_config(docs)[1]
    assert gate_taint_key(config) == CUSTOM_GATE
    writes = agent_writes(config)
    admission = Admission(docs)
    for name in ("readiness-gate-added", "readiness-gate-lifted"):
        decision = admission.review(update(*writes[name])(POD_TOKEN_A))
        assert decision.allowed is patched, (name, decision.messages)
