"""The rendered ValidatingAdmissionPolicies, evaluated the way the API server evaluates them.

An admission request is built as the API server builds the CEL variable ``request`` (an
``admission/v1`` AdmissionRequest turned into plain JSON: fields with ``omitempty`` absent
when empty, so ``request.userInfo.extra`` is not there for a user without extras, and
``subResource`` only for a subresource), with ``object`` null on DELETE and ``oldObject``
null on CREATE. A policy applies when one of its ``matchConstraints.resourceRules`` matches
and every ``matchCondition`` is true; it then denies when a validation is false, and, with
``failurePolicy: Fail``, when an expression fails (a missing field, null selected). Only
policies bound with the ``Deny`` action count.

The expressions run in ``cel-python`` (``celpy``), a standard CEL interpreter: the policy uses
no Kubernetes CEL library function, so nothing is re-implemented here except what the API
server adds around CEL, ``variables``: each is evaluated when first used and its value (or
its error) kept, so a variable that would fail for one kind of object costs nothing when the
expression that reads it is short-circuited, as in the API server. Errors are values in CEL
(``false || error`` is an error, ``true || error`` is true), and celpy keeps that.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import celpy
from celpy import celtypes

JSON = dict[str, Any]
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"


@functools.cache
def _environment() -> celpy.Environment:
    """The CEL environment, built on first use: building its parser takes a fifth of a second,
    which every pytest worker would otherwise pay while collecting, admission tests or not."""
    return celpy.Environment()


@dataclass(frozen=True)
class User:
    """``request.userInfo``: who the authenticator says sent the request."""

    username: str
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def as_json(self) -> JSON:
        info: JSON = {
            "username": self.username,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_OID, self.username)),
            "groups": list(self.groups),
        }
        if self.extra:  # omitempty: absent, not empty, for a user without extras
            info["extra"] = {key: list(values) for key, values in self.extra.items()}
        return info


def service_account(
    namespace: str,
    name: str,
    *,
    node: str | None = None,
    node_uid: str | None = None,
    pod: str | None = None,
) -> User:
    """A service-account token's user, with the extras the authenticator adds for it: pod
    and node for a pod-bound token, node alone for a Node-bound one (the uid only when the
    token carries it), a credential id (the token's JTI) always."""
    extra: dict[str, tuple[str, ...]] = {CREDENTIAL_ID_KEY: (f"JTI={uuid.uuid4()}",)}
    if pod is not None:
        extra[POD_NAME_KEY] = (pod,)
        extra[POD_UID_KEY] = (str(uuid.uuid5(uuid.NAMESPACE_OID, pod)),)
    if node is not None:
        extra[NODE_NAME_KEY] = (node,)
        if node_uid is not None:
            extra[NODE_UID_KEY] = (node_uid,)
    return User(
        f"system:serviceaccount:{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
        extra,
    )


@dataclass(frozen=True)
class Request:
    """One admission request: the attributes and objects the API server hands to a policy.

    ``operation`` is the admission operation: a PATCH or PUT is ``UPDATE``, an Eviction is
    a ``CREATE`` of the ``eviction`` subresource."""

    user: User
    operation: str
    group: str
    version: str
    resource: str
    kind: str
    name: str = ""
    namespace: str = ""
    subresource: str = ""
    object: JSON | None = None
    old_object: JSON | None = None
    kind_group_version: tuple[str, str] | None = None
    """The kind's group and version when they are not the resource's (an Eviction)."""

    def as_json(self) -> JSON:
        resource = {"group": self.group, "version": self.version, "resource": self.resource}
        group, version = self.kind_group_version or (self.group, self.version)
        kind = {"group": group, "version": version, "kind": self.kind}
        request: JSON = {
            "uid": str(uuid.uuid4()),
            "kind": kind,
            "resource": resource,
            "requestKind": kind,
            "requestResource": resource,
            "operation": self.operation,
            "userInfo": self.user.as_json(),
            "dryRun": False,
        }
        if self.subresource:
            request["subResource"] = request["requestSubResource"] = self.subresource
        if self.name:
            request["name"] = self.name
        if self.namespace:
            request["namespace"] = self.namespace
        return request


@dataclass(frozen=True)
class Decision:
    allowed: bool
    messages: tuple[str, ...] = ()
    """Why it was denied: each failed validation's message, or the expression's error."""
    matched: tuple[str, ...] = ()
    """The policies that applied to the request."""


class _Variables(celtypes.MapType):
    """``variables``: each evaluated on first use and kept, its error as its value."""

    def __init__(self, policy: Policy, activation: dict[str, Any]) -> None:
        super().__init__()
        self._policy = policy
        self._activation = activation
        self._values: dict[str, Any] = {}

    def __contains__(self, key: object) -> bool:
        return str(key) in self._policy.variables

    def __getitem__(self, key: Any) -> Any:
        name = str(key)
        if name not in self._policy.variables:
            return celpy.CELEvalError(f"no such variable: {name}")
        if name not in self._values:
            self._values[name] = _evaluate(self._policy.variables[name], self._activation)
        return self._values[name]


def _compile(expression: str) -> celpy.Runner:
    environment = _environment()
    return environment.program(environment.compile(expression))


def _evaluate(program: celpy.Runner, activation: dict[str, Any]) -> Any:
    """The value, or the ``CELEvalError`` it failed with (returned, as CEL treats errors)."""
    try:
        return program.evaluate(activation)
    except celpy.CELEvalError as error:
        return error


def _outcome(value: Any) -> bool | str:
    """True or False, or the reason the expression did not give a boolean."""
    if isinstance(value, celpy.CELEvalError):
        return f"expression failed: {value.args[0] if value.args else value}"
    if not isinstance(value, celtypes.BoolType):
        return f"expression gave {type(value).__name__}, not a bool"
    return bool(value)


_SCALARS = (
    (celtypes.StringType, str),
    (celtypes.BoolType, bool),  # before IntType: a CEL bool is a Python int
    (celtypes.IntType, int),
    (celtypes.UintType, int),
    (celtypes.DoubleType, float),
)


def _plain(value: Any) -> Any:
    """A CEL value as JSON data (lists, maps, strings, numbers, booleans, null)."""
    if isinstance(value, celtypes.ListType):
        return [_plain(each) for each in value]
    if isinstance(value, celtypes.MapType):
        return {str(key): _plain(each) for key, each in value.items()}
    for kind, plain in _SCALARS:
        if isinstance(value, kind):
            return plain(value)
    return value


def _rule_matches(rule: JSON, request: Request) -> bool:
    resource = request.resource + (f"/{request.subresource}" if request.subresource else "")
    resources = rule.get("resources") or []
    # "pods" is the resource alone, "pods/*" its subresources, "*" every resource (alone),
    # "*/status" every status subresource, "*/*" everything.
    if request.subresource:
        patterns = {resource, f"{request.resource}/*", f"*/{request.subresource}", "*/*"}
    else:
        patterns = {resource, "*", "*/*"}
    wanted_resource = bool(patterns & set(resources))
    return (
        wanted_resource
        and _listed(request.group, rule.get("apiGroups"))
        and _listed(request.version, rule.get("apiVersions"))
        and _listed(request.operation, rule.get("operations"))
    )


def _listed(value: str, values: Iterable[str] | None) -> bool:
    listed = list(values or [])
    return value in listed or "*" in listed


class Policy:
    """One rendered ValidatingAdmissionPolicy, compiled."""

    def __init__(self, document: JSON) -> None:
        self.name: str = document["metadata"]["name"]
        spec = document["spec"]
        self.spec: JSON = spec
        self.fail_closed = spec.get("failurePolicy", "Fail") == "Fail"
        self.rules: list[JSON] = (spec.get("matchConstraints") or {}).get("resourceRules") or []
        self.conditions = [
            (c["name"], _compile(c["expression"])) for c in spec.get("matchConditions") or []
        ]
        self.variables = {v["name"]: _compile(v["expression"]) for v in spec.get("variables") or []}
        self.validations = [
            (v.get("message") or v["expression"], _compile(v["expression"]))
            for v in spec.get("validations") or []
        ]

    def constant(self, name: str) -> Any:
        """The value of a variable that reads nothing of a request (a list of keys, say),
        as plain JSON data; a variable that does read one fails with ``AssertionError``."""
        activation: dict[str, Any] = {"request": None, "object": None, "oldObject": None}
        activation["params"] = None
        activation["variables"] = _Variables(self, activation)
        value = activation["variables"][name]
        assert not isinstance(value, celpy.CELEvalError), f"{name}: {value}"
        return _plain(value)

    def matches(self, request: Request) -> bool:
        """Whether ``matchConstraints`` select the request (before ``matchConditions``)."""
        return any(_rule_matches(rule, request) for rule in self.rules)

    def _activation(self, request: Request) -> dict[str, Any]:
        activation: dict[str, Any] = {
            "request": celpy.json_to_cel(request.as_json()),
            "object": celpy.json_to_cel(request.object),
            "oldObject": celpy.json_to_cel(request.old_object),
            "params": None,
        }
        activation["variables"] = _Variables(self, activation)
        return activation

    def evaluate(self, request: Request) -> Decision:
        """This policy's decision alone; ``matched`` is empty when it does not apply."""
        if not self.matches(request):
            return Decision(True)
        activation = self._activation(request)
        for name, program in self.conditions:
            outcome = _outcome(_evaluate(program, activation))
            if outcome is False:
                return Decision(True)
            if outcome is not True:
                failed = f"{self.name}: matchCondition {name}: {outcome}"
                return Decision(not self.fail_closed, (failed,), (self.name,))
        denied = []
        for message, program in self.validations:
            outcome = _outcome(_evaluate(program, activation))
            if outcome is True:
                continue
            if outcome is False or self.fail_closed:
                denied.append(f"{self.name}: {message if outcome is False else outcome}")
        return Decision(not denied, tuple(denied), (self.name,))


class Admission:
    """Every policy of a rendered set of manifests that a binding enforces with ``Deny``."""

    def __init__(self, documents: Iterable[JSON]) -> None:
        documents = list(documents)
        denying = {
            doc["spec"]["policyName"]
            for doc in documents
            if doc["kind"] == "ValidatingAdmissionPolicyBinding"
            and "Deny" in (doc["spec"].get("validationActions") or [])
            and not doc["spec"].get("matchResources")  # a narrowed binding: not modelled
        }
        self.policies = [
            Policy(doc)
            for doc in documents
            if doc["kind"] == "ValidatingAdmissionPolicy" and doc["metadata"]["name"] in denying
        ]

    def review(self, request: Request) -> Decision:
        """Allowed unless some enforced policy denies; every denial's messages."""
        decisions = [policy.evaluate(request) for policy in self.policies]
        return Decision(
            all(decision.allowed for decision in decisions),
            tuple(message for decision in decisions for message in decision.messages),
            tuple(name for decision in decisions for name in decision.matched),
        )

    def matching(self, request: Request) -> list[str]:
        """The enforced policies whose ``matchConstraints`` select the request."""
        return [policy.name for policy in self.policies if policy.matches(request)]
