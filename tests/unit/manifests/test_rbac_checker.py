"""The RBAC proof's two halves, on their own: HTTP requests mapped to RBAC attributes the way
the API server's request-info filter maps them, and rules evaluated the way its RBAC
authorizer does, so that the proof catches a missing verb and an unused one."""

from __future__ import annotations

import pytest

from tests.harness.kustomize import AGENT_ACCOUNT, DESCHEDULER_ACCOUNT, JSON, NAMESPACE, render
from tests.harness.rbac.authorizer import Grant, grants_for, not_allowed, unused
from tests.harness.rbac.recorder import component_of
from tests.harness.rbac.requestinfo import RequestAttributes, request_attributes

A = RequestAttributes


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        pytest.param("GET", "/api/v1/nodes/n1", {}, A("get", "", "nodes", name="n1"), id="get"),
        pytest.param("GET", "/api/v1/pods", {}, A("list", "", "pods"), id="list-all-namespaces"),
        pytest.param(
            "GET",
            "/api/v1/namespaces/ns/pods",
            {"fieldSelector": "spec.nodeName=n1"},
            A("list", "", "pods", namespace="ns"),
            id="list-in-namespace",
        ),
        pytest.param(
            "GET", "/api/v1/pods", {"watch": "1"}, A("watch", "", "pods"), id="watch-query"
        ),
        pytest.param(
            "GET", "/api/v1/pods", {"watch": "true"}, A("watch", "", "pods"), id="watch-true"
        ),
        pytest.param(
            "GET", "/api/v1/pods", {"watch": "false"}, A("list", "", "pods"), id="watch-false"
        ),
        pytest.param(
            "GET", "/api/v1/watch/nodes", {}, A("watch", "", "nodes"), id="legacy-watch-path"
        ),
        pytest.param(
            "GET",
            "/api/v1/nodes",
            {"watch": "1", "fieldSelector": "metadata.name=n1"},
            A("watch", "", "nodes", name="n1"),
            id="watch-by-name-names-the-object",
        ),
        pytest.param(
            "GET",
            "/api/v1/nodes",
            {"fieldSelector": "metadata.name!=n1"},
            A("list", "", "nodes"),
            id="not-equal-names-nothing",
        ),
        pytest.param(
            "POST",
            "/api/v1/namespaces/ns/pods/p/eviction",
            {},
            A("create", "", "pods", "eviction", "ns", "p"),
            id="eviction-is-create-on-the-subresource",
        ),
        pytest.param(
            "PATCH",
            "/api/v1/namespaces/ns/pods/p/status",
            {},
            A("patch", "", "pods", "status", "ns", "p"),
            id="patch-status",
        ),
        pytest.param(
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l",
            {},
            A("update", "coordination.k8s.io", "leases", namespace="ns", name="l"),
            id="put-is-update",
        ),
        pytest.param(
            "DELETE",
            "/api/v1/namespaces/ns/pods/p",
            {},
            A("delete", "", "pods", namespace="ns", name="p"),
            id="delete",
        ),
        pytest.param(
            "DELETE",
            "/api/v1/namespaces/ns/pods",
            {},
            A("deletecollection", "", "pods", namespace="ns"),
            id="deletecollection",
        ),
        pytest.param(
            "GET",
            "/api/v1/namespaces/ns",
            {},
            A("get", "", "namespaces", namespace="ns", name="ns"),
            id="a-namespace-itself",
        ),
        pytest.param(
            "PUT",
            "/api/v1/namespaces/ns/finalize",
            {},
            A("update", "", "namespaces", "finalize", "ns", "ns"),
            id="namespace-subresource",
        ),
        pytest.param(
            "PATCH",
            "/apis/kubelet-companion.io/v1alpha1/nodereports/n1/status",
            {},
            A("patch", "kubelet-companion.io", "nodereports", "status", name="n1"),
            id="custom-resource-status",
        ),
        pytest.param("GET", "/api/v1", {}, None, id="discovery"),
        pytest.param("GET", "/apis/apps/v1", {}, None, id="group-discovery"),
        pytest.param("GET", "/version", {}, None, id="non-resource"),
    ],
)
def test_requests_map_to_the_attributes_the_api_server_authorizes(
    method: str, path: str, query: dict[str, str], expected: RequestAttributes | None
) -> None:
    """Method, path and query give the verb, group, resource, subresource, namespace and
    name the API server's request-info filter gives."""
    assert request_attributes(method, path, query) == expected


@pytest.mark.parametrize(
    ("header", "component"),
    [
        pytest.param("kubelet-companion-agent/0.1.0", "agent", id="agent"),
        pytest.param("kubelet-companion-descheduler/9.9", "descheduler", id="descheduler"),
        pytest.param("OpenAPI-Generator/37.0.0/python", None, id="the-tests-own-client"),
        pytest.param("kubectl/v1.32.4 (linux/amd64)", None, id="kubectl"),
        pytest.param(None, None, id="none"),
    ],
)
def test_components_are_told_apart_by_user_agent(header: str | None, component: str) -> None:
    """Only requests carrying one of our components' User-Agents count, whatever version."""
    assert component_of(header) == component


def _covering(grants: list[Grant]) -> list[RequestAttributes]:
    """One request per grant, exactly what it allows: sufficient and minimal by design."""
    requests = []
    for grant in grants:
        resource, _, subresource = grant.resource.partition("/")
        namespace = grant.namespace or ("" if resource in ("nodes", "csinodes") else "ns")
        requests.append(A(grant.verb, grant.group, resource, subresource, namespace, grant.name))
    return requests


def _cluster_role(docs: list[JSON], name: str) -> JSON:
    (role,) = [d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == name]
    return role


def _rule(role: JSON, group: str, resource: str) -> JSON:
    (rule,) = [r for r in role["rules"] if group in r["apiGroups"] and resource in r["resources"]]
    return rule


@pytest.mark.parametrize(
    "account",
    [pytest.param(AGENT_ACCOUNT, id="agent"), pytest.param(DESCHEDULER_ACCOUNT, id="descheduler")],
)
def test_requests_covering_the_rendered_rules_pass_both_checks(account: str) -> None:
    """Baseline: one request per granted permission is all allowed and uses every grant."""
    grants = grants_for(render(), NAMESPACE, account)
    assert grants
    requests = _covering(grants)
    assert not_allowed(grants, requests) == []
    assert unused(grants, requests) == []


def test_a_verb_removed_from_the_rendered_rules_is_reported_missing() -> None:
    """Taking 'delete' off the agent's pods rule makes the shutdown's pod delete not allowed."""
    docs = render()
    requests = _covering(grants_for(docs, NAMESPACE, AGENT_ACCOUNT))
    _rule(_cluster_role(docs, AGENT_ACCOUNT), "", "pods")["verbs"].remove("delete")
    missing = not_allowed(grants_for(docs, NAMESPACE, AGENT_ACCOUNT), requests)
    assert [str(request) for request in missing] == ["delete core/pods in ns"]


def test_a_verb_added_to_the_rendered_rules_is_reported_unused() -> None:
    """Adding 'update' to the agent's nodes rule is a grant no request needed."""
    docs = render()
    requests = _covering(grants_for(docs, NAMESPACE, AGENT_ACCOUNT))
    _rule(_cluster_role(docs, AGENT_ACCOUNT), "", "nodes")["verbs"].append("update")
    extra = unused(grants_for(docs, NAMESPACE, AGENT_ACCOUNT), requests)
    assert [(g.verb, g.group, g.resource, g.namespace) for g in extra] == [
        ("update", "", "nodes", "")
    ]


def test_a_role_allows_only_its_namespace_and_resource_names_only_their_objects() -> None:
    """The descheduler's Lease Role: get/update only 'descheduler' in its namespace; create
    any Lease there; nothing in another namespace."""
    grants = grants_for(render(), NAMESPACE, DESCHEDULER_ACCOUNT)
    lease = "coordination.k8s.io"
    assert not not_allowed(
        grants, [A("update", lease, "leases", namespace=NAMESPACE, name="descheduler")]
    )
    assert not_allowed(grants, [A("update", lease, "leases", namespace=NAMESPACE, name="other")])
    assert not_allowed(
        grants, [A("update", lease, "leases", namespace="kube-system", name="descheduler")]
    )
    assert not not_allowed(grants, [A("create", lease, "leases", namespace=NAMESPACE)])
    assert not_allowed(grants, [A("create", lease, "leases", namespace="default")])
