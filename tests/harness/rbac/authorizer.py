"""RBAC's decision for a ServiceAccount, computed from rendered manifests.

Given the Roles, ClusterRoles and their bindings as ``kubectl kustomize`` renders them, this
answers two questions for one ServiceAccount: is a request allowed (the RBAC authorizer's
rule matching: verb, API group, resource or ``resource/subresource``, ``resourceNames``; a
Role only in its namespace, a ClusterRole everywhere through a ClusterRoleBinding and in one
namespace through a RoleBinding), and which single permissions ("grants") the rules hand
out, so that each can be checked against the requests that needed it.

Wildcards (``*``) are not interpreted: the manifests use none, and a test forbids them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .requestinfo import RequestAttributes

Manifest = Mapping[str, Any]


@dataclass(frozen=True, order=True)
class Grant:
    """One permission: ``verb`` on ``group``/``resource``, maybe one ``name``, maybe one
    ``namespace`` (``""``: every namespace and cluster-scoped objects)."""

    verb: str
    group: str
    resource: str
    name: str = ""
    namespace: str = ""
    role: str = ""

    def allows(self, request: RequestAttributes) -> bool:
        return (
            self.verb == request.verb
            and self.group == request.group
            and self.resource == request.qualified_resource
            and (not self.name or self.name == request.name)
            and (not self.namespace or self.namespace == request.namespace)
        )

    def __str__(self) -> str:
        named = f" {self.name!r}" if self.name else ""
        where = f" in {self.namespace}" if self.namespace else " cluster-wide"
        return f"{self.verb} {self.group or 'core'}/{self.resource}{named}{where} ({self.role})"


def _bound(binding: Manifest, namespace: str, account: str) -> bool:
    return any(
        subject.get("kind") == "ServiceAccount"
        and subject.get("name") == account
        and subject.get("namespace") == namespace
        for subject in binding.get("subjects") or []
    )


def grants_for(manifests: Iterable[Manifest], namespace: str, account: str) -> list[Grant]:
    """Every permission the bindings in ``manifests`` give ``namespace/account``."""
    docs = list(manifests)
    roles = {
        (doc["kind"], doc["metadata"].get("namespace", ""), doc["metadata"]["name"]): doc
        for doc in docs
        if doc["kind"] in ("Role", "ClusterRole")
    }
    grants: list[Grant] = []
    for binding in docs:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not _bound(binding, namespace, account):
            continue
        ref = binding["roleRef"]
        scope = binding["metadata"].get("namespace", "") if binding["kind"] == "RoleBinding" else ""
        role_namespace = scope if ref["kind"] == "Role" else ""
        role = roles.get((ref["kind"], role_namespace, ref["name"]))
        if role is None:
            continue  # a binding to a missing role grants nothing, as in the API server
        grants += _expand(role, scope)
    return grants


def _expand(role: Manifest, scope: str) -> list[Grant]:
    label = f"{role['kind']} {role['metadata']['name']}"
    return [
        Grant(verb, group, resource, name, scope, label)
        for rule in role.get("rules") or []
        for group in rule.get("apiGroups") or []
        for resource in rule.get("resources") or []
        for verb in rule.get("verbs") or []
        for name in rule.get("resourceNames") or [""]
    ]


def allowed(grants: Iterable[Grant], request: RequestAttributes) -> bool:
    """Whether any grant allows ``request``."""
    return any(grant.allows(request) for grant in grants)


def not_allowed(
    grants: Iterable[Grant], requests: Iterable[RequestAttributes]
) -> list[RequestAttributes]:
    """The requests no grant allows, sorted."""
    granted = list(grants)
    return sorted(request for request in set(requests) if not allowed(granted, request))


def unused(grants: Iterable[Grant], requests: Iterable[RequestAttributes]) -> list[Grant]:
    """The grants no request needed, sorted."""
    sent = set(requests)
    return sorted(grant for grant in set(grants) if not any(grant.allows(r) for r in sent))
