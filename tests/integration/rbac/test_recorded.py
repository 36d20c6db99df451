"""RBAC proven from the requests the code sends, not guessed.

Over the whole integration suite, ``tests.harness.rbac`` records every request the agent and
the descheduler send to the fake API server (told apart by their User-Agent) as the API
server's authorizer sees it. These tests, run last, check that the base's rendered Roles and
ClusterRoles allow each of them, and that each permission they grant was needed by at least
one request, or is on the short allow-list below with its reason.

One translation: the descheduler's Lease lives in ``--leader-elect-resource-namespace``,
upstream's default ``kube-system`` unless given. Most of the suite keeps the default; the
manifests pass their own namespace (tests/unit/manifests/test_match_code.py pins
that), so Lease requests are judged in the namespace the manifests send them to.
"""

from __future__ import annotations

import dataclasses

import pytest

from agent.descheduler.options import LEASE_NAMESPACE
from agent.kube.connection import AGENT, DESCHEDULER, Component
from tests.harness.kustomize import (
    AGENT_ACCOUNT,
    DESCHEDULER_ACCOUNT,
    JSON,
    NAMESPACE,
    render,
)
from tests.harness.rbac.authorizer import Grant, grants_for, not_allowed, unused
from tests.harness.rbac.plugin import recorded
from tests.harness.rbac.requestinfo import RequestAttributes

# Under xdist a proof waits for every other worker's tests (tests.harness.rbac.plugin).
pytestmark = [pytest.mark.rbac_proof, pytest.mark.timeout(1500)]

ACCOUNTS: dict[Component, str] = {AGENT: AGENT_ACCOUNT, DESCHEDULER: DESCHEDULER_ACCOUNT}

NOT_REACHED: dict[Component, dict[tuple[str, str, str], str]] = {
    AGENT: {},
    DESCHEDULER: {
        ("patch", "", "events"): (
            "the event recorder turns a repeat of an Event (same pod, reason and message) "
            "within one process into a patch of its count; a looping descheduler does that "
            "when one pod fails to evict the same way in two cycles, which no test stages"
        ),
    },
}
"""(verb, group, resource) granted for a path the suite does not reach, with the reason."""


def _as_installed(request: RequestAttributes) -> RequestAttributes:
    """``request`` as the installed component sends it (see the module docstring)."""
    if (request.group, request.resource, request.namespace) == (
        "coordination.k8s.io",
        "leases",
        LEASE_NAMESPACE,
    ):
        return dataclasses.replace(request, namespace=NAMESPACE)
    return request


def _sent(component: Component) -> dict[RequestAttributes, str]:
    session = recorded()
    sent = session.requests(component)
    if not sent:
        # After the whole suite, silence means the component lost its User-Agent.
        assert session.incomplete, f"the whole suite ran, yet no request came from {component}"
        pytest.skip(
            f"no request from the {component} was recorded in this session: run the "
            "integration suite (tests/integration) with this test to prove its RBAC"
        )
    installed: dict[RequestAttributes, str] = {}
    for request, test in sent.items():
        installed.setdefault(_as_installed(request), test)
    return installed


def _grants(component: Component, docs: list[JSON] | None = None) -> list[Grant]:
    return grants_for(render() if docs is None else docs, NAMESPACE, ACCOUNTS[component])


def _needed_but_unused(component: Component, grants: list[Grant]) -> list[Grant]:
    return [
        grant
        for grant in unused(grants, _sent(component))
        if (grant.verb, grant.group, grant.resource) not in NOT_REACHED[component]
    ]


def _require_whole_suite() -> None:
    incomplete = recorded().incomplete
    if incomplete:
        pytest.skip(
            "this session did not run the whole integration suite, so an unused permission "
            f"proves nothing ({len(incomplete)} gaps, e.g. {incomplete[0]})"
        )


def _summary(requests: dict[RequestAttributes, str]) -> list[str]:
    """The distinct requests, object names left out (evictions name every pod)."""
    return sorted({str(dataclasses.replace(request, name="")) for request in requests})


@pytest.mark.parametrize("component", [pytest.param(c, id=c) for c in ACCOUNTS])
def test_every_recorded_request_is_allowed(component: Component) -> None:
    """Each request the component sent in this session is allowed by its rendered RBAC."""
    sent = _sent(component)
    missing = not_allowed(_grants(component), sent)
    grouped: dict[str, list[RequestAttributes]] = {}
    for request in missing:
        grouped.setdefault(str(dataclasses.replace(request, name="")), []).append(request)
    assert not missing, "\n".join(
        [f"{component}: the rendered RBAC does not allow:"]
        + [
            f"  {line} ({len(group)} objects, first sent by {sent[group[0]]})"
            for line, group in sorted(grouped.items())
        ]
    )


@pytest.mark.parametrize("component", [pytest.param(c, id=c) for c in ACCOUNTS])
def test_every_granted_permission_was_needed(component: Component) -> None:
    """Each permission the component's rendered RBAC grants was used by a recorded request,
    or is on the allow-list of paths the suite does not reach."""
    sent = _sent(component)
    _require_whole_suite()
    extra = _needed_but_unused(component, _grants(component))
    assert not extra, "\n".join(
        [f"{component}: granted, but no recorded request needed it:"]
        + [f"  {grant}" for grant in extra]
        + [f"  (integration tests not passed: {', '.join(recorded().not_passed) or 'none'})"]
        + [f"  recorded: {line}" for line in _summary(sent)]
    )


def test_the_allow_list_names_only_permissions_that_are_granted() -> None:
    """Every allow-list entry is granted by the rendered RBAC (no stale excuses)."""
    for component, entries in NOT_REACHED.items():
        granted = {(g.verb, g.group, g.resource) for g in _grants(component)}
        assert set(entries) <= granted, component


def _rule(docs: list[JSON], kind: str, name: str, group: str, resource: str) -> JSON:
    (role,) = [d for d in docs if (d["kind"], d["metadata"]["name"]) == (kind, name)]
    (rule,) = [r for r in role["rules"] if group in r["apiGroups"] and resource in r["resources"]]
    return rule


def test_the_recorded_check_catches_an_injected_missing_verb() -> None:
    """With 'delete' taken off the agent's pods rule in memory, the shutdown's recorded pod
    deletes are reported as not allowed."""
    sent = _sent(AGENT)
    if not any((r.verb, r.qualified_resource) == ("delete", "pods") for r in sent):
        pytest.skip("no shutdown test in this session: the agent deleted no pod")
    docs = render()
    _rule(docs, "ClusterRole", AGENT_ACCOUNT, "", "pods")["verbs"].remove("delete")
    missing = not_allowed(_grants(AGENT, docs), sent)
    assert missing
    assert {(r.verb, r.group, r.qualified_resource) for r in missing} == {("delete", "", "pods")}


def test_the_recorded_check_catches_an_injected_unused_verb() -> None:
    """With 'update' added to the agent's nodes rule in memory, the grant no recorded
    request needed is reported (the agent only ever patches its Node)."""
    _sent(AGENT)
    _require_whole_suite()
    docs = render()
    _rule(docs, "ClusterRole", AGENT_ACCOUNT, "", "nodes")["verbs"].append("update")
    extra = _needed_but_unused(AGENT, _grants(AGENT, docs))
    assert [(g.verb, g.group, g.resource) for g in extra] == [("update", "", "nodes")]
