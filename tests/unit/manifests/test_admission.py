"""The base's ValidatingAdmissionPolicy keeps each agent to its own node: it is taken from
``kubectl kustomize daemonset/base`` and its CEL runs in a real interpreter
(``tests/harness/admission.py``) against admission requests built as the API server builds
them, for every write the agent's ClusterRole grants, from the agent's own node and aimed
at another one.

The objects are the agent's own where it makes them: the NodeReport from
``agent.kube.reportwriter.report_object``, the Events as ``EventRecorder`` posts and patches
them. So a change to what the agent sends that the policy would refuse fails here, not in a
cluster.
"""

from __future__ import annotations

import copy
import os
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.daemon import COMPONENT
from agent.kube.events import EventRecorder, ObjectRef
from agent.kube.reportwriter import report_object
from agent.kube.resources import NODE_REPORTS
from agent.swap.labels import SWAP_LABEL
from tests.harness import kubeobjects
from tests.harness.admission import (
    NODE_NAME_KEY,
    Admission,
    Request,
    User,
    service_account,
)
from tests.harness.kustomize import (
    AGENT_ACCOUNT,
    BASE,
    DESCHEDULER_ACCOUNT,
    JSON,
    NAMESPACE,
    need_kubectl,
    one,
    render,
    target_id,
    targets,
)
from tests.harness.repository import DOCS

POLICY = "kubelet-companion-own-node-only"
UID_A, UID_B = "0b5e3a49-6a53-4d4b-9c3e-0000000000aa", "0b5e3a49-6a53-4d4b-9c3e-0000000000bb"

# The agent on node-a, as each kind of credential presents it.
POD_TOKEN_A = service_account(
    NAMESPACE, AGENT_ACCOUNT, node="node-a", node_uid=UID_A, pod="kubelet-companion-agent-x7k2p"
)
NODE_TOKEN_A = service_account(NAMESPACE, AGENT_ACCOUNT, node="node-a", node_uid=UID_A)
NODE_TOKEN_A_NO_UID = service_account(NAMESPACE, AGENT_ACCOUNT, node="node-a")
"""A pod-bound token issued while its Node was not found carries the node's name alone."""
# The agent's account with credentials that name no node.
POD_TOKEN_NO_NODE = service_account(NAMESPACE, AGENT_ACCOUNT, pod="kubelet-companion-agent-x7k2p")
"""A pod-bound token issued before Kubernetes 1.30, or with ServiceAccountTokenPodNodeInfo off."""
NO_EXTRA = User(
    f"system:serviceaccount:{NAMESPACE}:{AGENT_ACCOUNT}",
    ("system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}", "system:authenticated"),
)
"""A token with no extras at all (e.g. a legacy Secret-based one): ``extra`` is absent."""
EMPTY_NODE_CLAIM = User(NO_EXTRA.username, NO_EXTRA.groups, {NODE_NAME_KEY: ()})


@pytest.fixture(scope="session")
def admission() -> Admission:
    """The policies of the rendered base, as the API server enforces them."""
    return Admission(render())


# -- objects ------------------------------------------------------------------------------


def node(name: str, uid: str, labels: dict[str, str] | None = None) -> JSON:
    return kubeobjects.node(name, uid=uid, labels=labels)


def pod(name: str, node_name: str | None) -> JSON:
    """A pod in ``shop``, bound to ``node_name`` (or to no node yet)."""
    return kubeobjects.pod(name, node_name, namespace="shop", uid=f"uid-{name}")


class _CapturingApi:
    """Stands in for ``KubeApi``: keeps what ``EventRecorder`` sends."""

    def __init__(self) -> None:
        self.created: list[JSON] = []
        self.patches: list[JSON] = []

    def send(self, method: str, path: str, **kwargs: Any) -> None:
        assert (method, path.rsplit("/", 1)[-1]) == ("POST", "events")
        self.created.append(kwargs["body"])

    def patch(self, resource: Any, name: str, patch: Any, **options: Any) -> JSON:
        assert (resource.plural, options["patch_type"]) == ("events", "merge"), name
        self.patches.append(patch)
        return {}


class _Kube:
    def __init__(self) -> None:
        self.api = _CapturingApi()


def agent_event(host: str, involved: ObjectRef, *, repeat: bool = False) -> tuple[JSON, JSON]:
    """The Event the agent on ``host`` creates about ``involved``, and that Event after the
    agent's aggregating patch of a repeat (count and lastTimestamp merged in)."""
    kube = _Kube()
    recorder = EventRecorder(kube, component=COMPONENT, host=host)  # type: ignore[arg-type]
    recorder.emit_now(involved, "Warning", "SwapDrift", "memory.swap.max differs")
    recorder.emit_now(involved, "Warning", "SwapDrift", "memory.swap.max differs")
    (created,) = kube.api.created
    (patch,) = kube.api.patches
    return created, {**copy.deepcopy(created), **patch}


def other_event(kind: str, name: str, namespace: str, host: str) -> JSON:
    """An Event someone else reported (kubelet on ``host``, say)."""
    involved = {"kind": kind, "name": name, "apiVersion": "v1"}
    if kind != "Node":
        involved["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.17d", "namespace": namespace},
        "involvedObject": involved,
        "reason": "Started",
        "message": "Started container app",
        "source": {"component": "kubelet", "host": host},
        "reportingComponent": "kubelet",
        "reportingInstance": host,
        "count": 1,
    }


def report(owner_refs: list[JSON] | None, name: str = "node-a") -> JSON:
    body = report_object(name, UID_A)
    if owner_refs is None:
        del body["metadata"]["ownerReferences"]
    else:
        body["metadata"]["ownerReferences"] = owner_refs
    return body


def node_owner(name: str, uid: str, *, kind: str = "Node", api_version: str = "v1") -> JSON:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}


# -- requests: every write the agent's ClusterRole grants ---------------------------------


def patch_node(name: str, uid: str) -> Callable[[User], Request]:
    """A patch of the Node's labels that adds the swap label, as the agent's swap controller
    does (every change the agent makes to its Node: test_admission_node.py)."""
    before = {"kubernetes.io/hostname": name}
    old, new = node(name, uid, before), node(name, uid, {**before, SWAP_LABEL: "true"})
    return lambda user: Request(
        user, "UPDATE", "", "v1", "nodes", "Node", name=name, object=new, old_object=old
    )


def delete_pod(target: JSON) -> Callable[[User], Request]:
    meta = target["metadata"]
    return lambda user: Request(
        user, "DELETE", "", "v1", "pods", "Pod",
        name=meta["name"], namespace=meta["namespace"], old_object=target,
    )  # fmt: skip


def patch_pod_status(target: JSON) -> Callable[[User], Request]:
    meta = target["metadata"]
    after = copy.deepcopy(target)
    after["status"] = {"conditions": [{"type": "DisruptionTarget", "status": "True"}]}
    return lambda user: Request(
        user, "UPDATE", "", "v1", "pods", "Pod", subresource="status",
        name=meta["name"], namespace=meta["namespace"], object=after, old_object=target,
    )  # fmt: skip


def evict(target: JSON) -> Callable[[User], Request]:
    meta = target["metadata"]
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
    }
    return lambda user: Request(
        user, "CREATE", "", "v1", "pods", "Eviction", subresource="eviction",
        name=meta["name"], namespace=meta["namespace"], object=eviction,
        kind_group_version=("policy", "v1"),
    )  # fmt: skip


def create_event(event: JSON) -> Callable[[User], Request]:
    meta = event["metadata"]
    return lambda user: Request(
        user, "CREATE", "", "v1", "events", "Event",
        name=meta["name"], namespace=meta["namespace"], object=event,
    )  # fmt: skip


def patch_event(before: JSON, after: JSON) -> Callable[[User], Request]:
    meta = before["metadata"]
    return lambda user: Request(
        user, "UPDATE", "", "v1", "events", "Event",
        name=meta["name"], namespace=meta["namespace"], object=after, old_object=before,
    )  # fmt: skip


def create_report(body: JSON) -> Callable[[User], Request]:
    return lambda user: Request(
        user, "CREATE", NODE_REPORTS.group, NODE_REPORTS.version, "nodereports",
        NODE_REPORTS.kind, name=body["metadata"]["name"], object=body,
    )  # fmt: skip


def patch_report_status(
    name: str, owner: str = "node-a", uid: str = UID_A
) -> Callable[[User], Request]:
    before = report([node_owner(owner, uid)], name)
    before["status"] = {"observedTime": "2026-05-01T10:00:00Z"}
    after = copy.deepcopy(before)
    after["status"]["observedTime"] = "2026-05-01T10:00:30Z"
    return lambda user: Request(
        user, "UPDATE", NODE_REPORTS.group, NODE_REPORTS.version, "nodereports",
        NODE_REPORTS.kind, subresource="status", name=name, object=after, old_object=before,
    )  # fmt: skip


NODE_EVENT_A, NODE_EVENT_A_REPEAT = agent_event("node-a", ObjectRef.node("node-a", UID_A))
POD_EVENT_A, POD_EVENT_A_REPEAT = agent_event(
    "node-a", ObjectRef(kind="Pod", name="web-0", namespace="shop", uid="uid-web-0")
)
NODE_EVENT_A_ABOUT_B, _ = agent_event("node-a", ObjectRef.node("node-b", UID_B))
DEPLOYMENT_EVENT_A, _ = agent_event(
    "node-a", ObjectRef(kind="Deployment", name="web", namespace="shop", api_version="apps/v1")
)
NODE_EVENT_B_BY_KUBELET = other_event("Node", "node-b", "default", "node-b")
POD_EVENT_BY_KUBELET_B = other_event("Pod", "web-1", "shop", "node-b")

OWN_WRITES = [
    pytest.param(patch_node("node-a", UID_A), id="patch-nodes/node-a"),
    pytest.param(delete_pod(pod("web-0", "node-a")), id="delete-pod-on-node-a"),
    pytest.param(patch_pod_status(pod("web-0", "node-a")), id="patch-pods/status-on-node-a"),
    pytest.param(evict(pod("web-0", "node-a")), id="create-pods/eviction-on-node-a"),
    pytest.param(create_event(NODE_EVENT_A), id="create-event-about-node-a"),
    pytest.param(create_event(POD_EVENT_A), id="create-event-about-a-pod"),
    pytest.param(patch_event(NODE_EVENT_A, NODE_EVENT_A_REPEAT), id="patch-event-about-node-a"),
    pytest.param(patch_event(POD_EVENT_A, POD_EVENT_A_REPEAT), id="patch-event-about-a-pod"),
    pytest.param(create_report(report_object("node-a", UID_A)), id="create-nodereports/node-a"),
    pytest.param(patch_report_status("node-a"), id="patch-nodereports/node-a/status"),
]
"""Everything the agent on node-a writes, each as it sends it."""


@pytest.mark.parametrize(
    "user",
    [
        pytest.param(POD_TOKEN_A, id="pod-bound-token"),
        pytest.param(NODE_TOKEN_A, id="node-bound-token"),
        pytest.param(NODE_TOKEN_A_NO_UID, id="node-name-without-uid"),
    ],
)
@pytest.mark.parametrize("write", OWN_WRITES)
def test_every_write_of_the_agent_about_its_own_node_is_admitted(
    admission: Admission, user: User, write: Callable[[User], Request]
) -> None:
    """Each write the agent makes about its own node passes the policy, with its pod's token
    and with a token bound to its Node, and the policy did apply to it."""
    decision = admission.review(write(user))
    assert decision.matched == (POLICY,)
    assert decision.allowed, decision.messages


OTHER_NODE_WRITES = [
    pytest.param(patch_node("node-b", UID_B), "only its own Node", id="patch-nodes/node-b"),
    pytest.param(
        delete_pod(pod("web-1", "node-b")), "only pods bound to its own node",
        id="delete-pod-on-node-b",
    ),
    pytest.param(
        delete_pod(pod("web-2", None)), "only pods bound to its own node",
        id="delete-pending-pod",
    ),
    pytest.param(
        patch_pod_status(pod("web-1", "node-b")), "only pods bound to its own node",
        id="patch-pods/status-on-node-b",
    ),
    pytest.param(
        create_event(NODE_EVENT_A_ABOUT_B), "only about its own Node or about pods",
        id="create-event-about-node-b",
    ),
    pytest.param(
        create_event(DEPLOYMENT_EVENT_A), "only about its own Node or about pods",
        id="create-event-about-a-deployment",
    ),
    pytest.param(
        create_event(other_event("Pod", "web-1", "shop", "node-b")),
        "reported from its own node", id="create-event-posing-as-node-b",
    ),
    pytest.param(
        patch_event(NODE_EVENT_B_BY_KUBELET, {**NODE_EVENT_B_BY_KUBELET, "count": 9}),
        "reported from its own node", id="patch-kubelets-event-about-node-b",
    ),
    pytest.param(
        patch_event(
            POD_EVENT_BY_KUBELET_B,
            {**POD_EVENT_BY_KUBELET_B, "reportingInstance": "node-a",
             "source": {"component": "kubelet", "host": "node-a"}},
        ),
        "reported from its own node", id="patch-someone-elses-event-to-claim-it",
    ),
    pytest.param(
        create_report(report([node_owner("node-b", UID_B)], "node-b")),
        "only the NodeReport named after its own node", id="create-nodereports/node-b",
    ),
    pytest.param(
        create_report(report([node_owner("node-b", UID_B)])),
        "one owner reference, to its own Node", id="create-own-report-owned-by-node-b",
    ),
    pytest.param(
        create_report(report([node_owner("node-a", UID_B)])),
        "one owner reference, to its own Node", id="create-own-report-owned-by-another-uid",
    ),
    pytest.param(
        create_report(report([node_owner("node-a", UID_A), node_owner("node-b", UID_B)])),
        "one owner reference, to its own Node", id="create-own-report-also-owned-by-node-b",
    ),
    pytest.param(
        create_report(report(None)), "one owner reference, to its own Node",
        id="create-own-report-without-owner",
    ),
    pytest.param(
        create_report(report([node_owner("node-a", UID_A, kind="Pod")])),
        "one owner reference, to its own Node", id="create-own-report-owned-by-a-pod",
    ),
    pytest.param(
        create_report(report([node_owner("node-a", UID_A, api_version="example.com/v1")])),
        "one owner reference, to its own Node", id="create-own-report-owned-by-a-foreign-node",
    ),
    pytest.param(
        patch_report_status("node-b", "node-b", UID_B),
        "only the NodeReport named after its own node", id="patch-nodereports/node-b/status",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("write", "reason"), OTHER_NODE_WRITES)
def test_a_write_about_another_node_is_denied(
    admission: Admission, write: Callable[[User], Request], reason: str
) -> None:
    """With node-a's pod token, a write that reaches into node-b (its Node, its pods, its
    NodeReport, Events in its name) or a report that would claim another Node is denied,
    with the message that says why (what it may change on node-a itself:
    test_admission_node.py)."""
    decision = admission.review(write(POD_TOKEN_A))
    assert not decision.allowed
    assert any(reason in message for message in decision.messages), decision.messages


def test_a_report_of_any_uid_is_admitted_when_the_token_carries_no_node_uid(
    admission: Admission,
) -> None:
    """The uid is checked where the token carries one: a token that names only the node
    leaves the owner's uid to the API server's garbage collector (a wrong one is collected)."""
    write = create_report(report([node_owner("node-a", UID_B)]))
    assert admission.review(write(NODE_TOKEN_A_NO_UID)).allowed
    assert not admission.review(write(NODE_TOKEN_A)).allowed


def test_an_eviction_elsewhere_is_not_narrowed(admission: Admission) -> None:
    """The documented gap: an Eviction does not say where its pod runs, so the agent's
    eviction of a pod on node-b is admitted (PodDisruptionBudgets still apply)."""
    assert admission.review(evict(pod("web-1", "node-b"))(POD_TOKEN_A)).allowed


@pytest.mark.parametrize(
    "user",
    [
        pytest.param(POD_TOKEN_NO_NODE, id="pod-token-without-node"),
        pytest.param(NO_EXTRA, id="no-extra-at-all"),
        pytest.param(EMPTY_NODE_CLAIM, id="empty-node-claim"),
    ],
)
@pytest.mark.parametrize("write", OWN_WRITES)
def test_without_a_node_claim_every_write_is_denied(
    admission: Admission, user: User, write: Callable[[User], Request]
) -> None:
    """Fail closed: the agent's account with credentials that name no node may write
    nothing, not even what it could write about node-a with them."""
    decision = admission.review(write(user))
    assert not decision.allowed
    assert any("credentials name no node" in message for message in decision.messages), (
        decision.messages
    )


OTHER_USERS = [
    pytest.param(
        service_account(NAMESPACE, DESCHEDULER_ACCOUNT, node="node-c", pod="descheduler-0"),
        id="descheduler",
    ),
    pytest.param(User("kubernetes-admin", ("system:masters", "system:authenticated")), id="admin"),
    pytest.param(
        User("system:node:node-b", ("system:nodes", "system:authenticated")), id="kubelet"
    ),
    pytest.param(
        service_account("other", AGENT_ACCOUNT, node="node-a"), id="same-name-other-namespace"
    ),
]


@pytest.mark.parametrize("user", OTHER_USERS)
@pytest.mark.parametrize(
    "write",
    [
        pytest.param(patch_node("node-b", UID_B), id="patch-nodes/node-b"),
        pytest.param(delete_pod(pod("web-1", "node-b")), id="delete-pod-on-node-b"),
        pytest.param(create_event(NODE_EVENT_B_BY_KUBELET), id="create-event-about-node-b"),
        pytest.param(
            create_report(report([node_owner("node-b", UID_B)], "node-b")),
            id="create-nodereports/node-b",
        ),
        pytest.param(patch_report_status("node-b", "node-b", UID_B), id="patch-report-status"),
    ],
)
def test_other_users_are_not_matched(
    admission: Admission, user: User, write: Callable[[User], Request]
) -> None:
    """The policy is the agent's alone: for the descheduler, an admin, a kubelet or a
    namesake account elsewhere its matchConditions are false and every write is admitted."""
    decision = admission.review(write(user))
    assert decision.allowed, decision.messages
    assert decision.matched == ()


_OPERATIONS = {"create": "CREATE", "update": "UPDATE", "patch": "UPDATE", "delete": "DELETE",
               "deletecollection": "DELETE"}  # fmt: skip
"""Admission sees a PATCH or PUT as UPDATE, and a collection delete item by item."""


def _agent_writes(docs: list[JSON]) -> list[tuple[str, str, str, str]]:
    """(verb, group, resource, subresource) of every write the agent's ClusterRole grants."""
    role = one(docs, "ClusterRole", AGENT_ACCOUNT)
    writes = []
    for rule in role["rules"]:
        for verb in rule["verbs"]:
            if verb not in _OPERATIONS and verb != "*":
                continue
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    name, _, sub = resource.partition("/")
                    writes.append((verb, group, name, sub))
    return writes


@pytest.mark.parametrize("target", [pytest.param(path, id=target_id(path)) for path in targets()])
def test_every_write_the_agents_rbac_grants_is_matched_by_the_policy(target: Any) -> None:
    """In the base and every overlay, each write verb of the agent's ClusterRole (on each of
    its resources) is selected by the policy's matchConstraints: a write granted later
    without a node check here fails this test."""
    docs = render(target)
    admission = Admission(docs)
    writes = _agent_writes(docs)
    assert {(v, r, s) for v, _, r, s in writes} >= {
        ("patch", "nodes", ""), ("delete", "pods", ""), ("patch", "pods", "status"),
        ("create", "pods", "eviction"), ("create", "events", ""), ("patch", "events", ""),
        ("create", "nodereports", ""), ("patch", "nodereports", "status"),
    }  # fmt: skip
    unmatched = []
    for verb, group, resource, subresource in writes:
        request = Request(
            POD_TOKEN_A, _OPERATIONS.get(verb, "UPDATE"), group, "v1", resource, "Any",
            name="x", subresource=subresource,
        )  # fmt: skip
        if admission.matching(request) != [POLICY]:
            unmatched.append((verb, group, resource, subresource))
    assert unmatched == []


@pytest.mark.parametrize("target", [pytest.param(path, id=target_id(path)) for path in targets()])
def test_the_policy_names_the_rendered_agent_account_and_is_enforced(target: Any) -> None:
    """Every kustomization ships the policy with a Deny binding, and its matchCondition names
    the agent's ServiceAccount in the namespace it is rendered in (a namespace change that
    missed the CEL string would leave the policy matching nobody)."""
    docs = render(target)
    account = one(docs, "ServiceAccount", AGENT_ACCOUNT)["metadata"]
    binding = one(docs, "ValidatingAdmissionPolicyBinding", POLICY)
    assert binding["spec"] == {"policyName": POLICY, "validationActions": ["Deny"]}
    (condition,) = one(docs, "ValidatingAdmissionPolicy", POLICY)["spec"]["matchConditions"]
    username = f"system:serviceaccount:{account['namespace']}:{account['name']}"
    assert f"'{username}'" in condition["expression"]
    assert [policy.name for policy in Admission(docs).policies] == [POLICY]


def test_the_checks_can_fail_without_the_nodereport_rules(admission: Admission) -> None:
    """The harness is not vacuous: with the NodeReport validations taken out of the rendered
    policy in memory, node-a's token creates nodereports/node-b (the reported gap)."""
    docs = render()
    policy = one(docs, "ValidatingAdmissionPolicy", POLICY)
    policy["spec"]["validations"] = [
        v for v in policy["spec"]["validations"] if "report" not in v["expression"].lower()
    ]
    write = create_report(report([node_owner("node-b", UID_B)], "node-b"))
    assert not admission.review(write(POD_TOKEN_A)).allowed
    assert Admission(docs).review(write(POD_TOKEN_A)).allowed


def test_an_expression_error_denies_with_failure_policy_fail(admission: Admission) -> None:
    """The harness applies failurePolicy Fail: a validation that cannot be evaluated (here
    one selecting a field of a null oldObject) denies instead of admitting."""
    docs = render()
    policy = one(docs, "ValidatingAdmissionPolicy", POLICY)
    policy["spec"]["validations"].append({"expression": "oldObject.spec.nodeName == 'x'"})
    decision = Admission(docs).review(create_event(NODE_EVENT_A)(POD_TOKEN_A))
    assert not decision.allowed
    assert any("expression failed" in message for message in decision.messages)


PERMISSIONS_PAGE = DOCS / "permissions.md"
DROP_EVICTIONS = "<!-- drop-evictions"


def _documented_patch() -> str:
    """The YAML block that follows the drop-evictions marker in docs/permissions.md, unindented."""
    text = PERMISSIONS_PAGE.read_text()
    after = text[text.index(DROP_EVICTIONS) :].split("```yaml\n", 1)[1].split("```", 1)[0]
    return textwrap.dedent(after)


def test_the_documented_patch_drops_only_the_eviction_rule(tmp_path: Path) -> None:
    """The kustomize patch docs/permissions.md gives for ``shutdown.mode: delete`` renders on
    the base: the agent's ClusterRole loses pods/eviction and nothing else, and the policy
    still matches every write left (its JSON-patch ``test`` op fails the render if the rule
    moves)."""
    kubectl = need_kubectl()
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [{os.path.relpath(BASE, tmp_path)}]\n" + _documented_patch()
    )
    result = subprocess.run(
        [kubectl, "kustomize", str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    docs = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    rules = one(docs, "ClusterRole", AGENT_ACCOUNT)["rules"]
    base_rules = one(render(), "ClusterRole", AGENT_ACCOUNT)["rules"]
    assert [r for r in base_rules if r["resources"] != ["pods/eviction"]] == rules
    assert len(rules) == len(base_rules) - 1
    assert ("create", "", "pods", "eviction") not in _agent_writes(docs)
    assert _agent_writes(docs)


# -- who else can get a node's identity ---------------------------------------------------

NODE_IDENTITY_ROUTES = "<!-- node-identity-routes"
ROUTE_RIGHTS = [
    ("create", "pods"),
    ("create", "deployments"),
    ("create", "daemonsets"),
    ("create", "jobs"),
    ("create", "cronjobs"),
    ("patch", "daemonsets"),
    ("create", "serviceaccounts/token"),
    ("create", "pods/exec"),
    ("create", "pods/attach"),
    ("patch", "pods/ephemeralcontainers"),
    ("impersonate", "serviceaccounts"),
    ("impersonate", "userextras/authentication.kubernetes.io/node-name"),
    ("create", "secrets"),
    ("update", "validatingadmissionpolicies"),
    ("delete", "validatingadmissionpolicybindings"),
]
"""(verb, resource): each right that gets a token the policy takes for some node's agent
(or, for secrets, a legacy token with the agent's reads), or that removes the policy."""


def _documented_routes() -> list[str]:
    """The first column of each row of the table after the node-identity-routes marker."""
    text = PERMISSIONS_PAGE.read_text()
    lines = text[text.index(NODE_IDENTITY_ROUTES) :].splitlines()[1:]
    rows = []
    for line in lines[2:]:  # the header and its rule
        if not line.startswith("|"):
            break
        rows.append(line.split("|")[1])
    return rows


@pytest.mark.parametrize(("verb", "resource"), ROUTE_RIGHTS)
def test_every_way_to_a_node_identity_is_documented(verb: str, resource: str) -> None:
    """docs/permissions.md lists, with the RBAC right that gives it, every way to get a
    token the policy takes for a node's agent without stealing one (issue 27, finding 8):
    creating pods or workloads in the agent's namespace, changing its DaemonSet, minting
    tokens for its ServiceAccount, exec/attach/ephemeral containers in its pods,
    impersonating it with a node-name extra, a legacy token Secret, removing the policy."""
    rows = _documented_routes()
    assert any(f"`{verb}`" in row and f"`{resource}`" in row for row in rows), rows


ROUTE_IDENTITIES = [
    pytest.param(
        service_account(NAMESPACE, AGENT_ACCOUNT, node="node-c", node_uid="u-c", pod="debug"),
        id="token-of-any-pod-running-as-the-agent",
    ),
    pytest.param(
        service_account(NAMESPACE, AGENT_ACCOUNT, node="node-c", node_uid="u-c"),
        id="token-requested-for-any-node",
    ),
    pytest.param(
        User(NO_EXTRA.username, NO_EXTRA.groups, {NODE_NAME_KEY: ("node-c",)}),
        id="impersonation-with-a-node-name-extra",
    ),
]


@pytest.mark.parametrize("user", ROUTE_IDENTITIES)
def test_the_policy_cannot_tell_a_minted_node_identity_from_the_agents(
    admission: Admission, user: User
) -> None:
    """The documented gap those rights open: a token of any pod that runs as the agent
    (whatever its name), one bound to any Node, or an impersonation that sets the
    node-name extra is taken for that node's agent, so RBAC must keep them from people."""
    assert admission.review(patch_node("node-c", "u-c")(user)).allowed
    assert not admission.review(patch_node("node-b", UID_B)(user)).allowed


def _grants(rule: JSON, verb: str, resource: str) -> bool:
    """Whether an RBAC rule allows ``verb`` on ``resource`` (any API group): as RBAC
    matches, ``*`` for every verb or resource, ``*/<subresource>`` for a subresource."""
    verbs, resources = rule.get("verbs") or [], rule.get("resources") or []
    _, slash, subresource = resource.partition("/")
    matching = {resource, "*"} | ({f"*/{subresource}"} if slash else set())
    return (verb in verbs or "*" in verbs) and bool(matching & set(resources))


@pytest.mark.parametrize("target", [pytest.param(path, id=target_id(path)) for path in targets()])
def test_no_shipped_role_grants_a_way_to_a_node_identity(target: Any) -> None:
    """No Role or ClusterRole the base or an overlay ships grants any of those rights, to
    anyone: a manifest change that did would fail here."""
    found = [
        (doc["kind"], doc["metadata"]["name"], verb, resource)
        for doc in render(target)
        if doc["kind"] in ("Role", "ClusterRole")
        for rule in doc.get("rules") or []
        for verb, resource in ROUTE_RIGHTS
        if _grants(rule, verb, resource)
    ]
    assert found == []
