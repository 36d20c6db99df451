"""An HTTP request as RBAC sees it: the attributes the API server authorizes.

The API server does not authorize HTTP methods and paths; its request-info filter first turns
them into a verb, an API group, a resource and subresource, a namespace and a name, and RBAC
matches rules against those. A test that proves our Roles from the requests we send must
make the same translation, so this follows the server's rules step by step:

- ``/api/<version>/...`` is the core group (``""``), ``/apis/<group>/<version>/...`` any
  other; shorter paths (``/api``, ``/apis/<group>``, ``/version``) are discovery or
  non-resource requests, which the default ``system:discovery`` role already covers.
- A leading ``watch/`` segment (the legacy watch paths) makes the verb ``watch``; otherwise
  POST is ``create``, GET and HEAD ``get``, PUT ``update``, PATCH ``patch``, DELETE ``delete``.
- ``namespaces/<ns>/`` before a resource sets the namespace, except before ``status`` or
  ``finalize``, which are subresources of the namespace itself.
- The rest is ``<resource>[/<name>[/<subresource>]]``.
- A GET without a name is ``list``, or ``watch`` with ``watch=true|1``; a ``metadata.name=X``
  field selector then names the object (so ``resourceNames`` rules can match). A DELETE
  without a name is ``deletecollection``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True, order=True)
class RequestAttributes:
    """What RBAC authorizes: ``verb`` on ``group``/``resource``[/``subresource``]."""

    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def qualified_resource(self) -> str:
        """``resource`` or ``resource/subresource``, as RBAC rules spell them."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    def __str__(self) -> str:
        group = self.group or "core"
        where = f" in {self.namespace}" if self.namespace else ""
        named = f" {self.name!r}" if self.name else ""
        return f"{self.verb} {group}/{self.qualified_resource}{named}{where}"


def _first(query: Mapping[str, str | list[str]], key: str) -> str | None:
    value = query.get(key)
    if isinstance(value, list):
        return value[0] if value else None
    return value


def _selected_name(field_selector: str | None) -> str:
    """The name an exact ``metadata.name=X`` (or ``==``) field selector pins, else ``""``."""
    for term in (field_selector or "").split(","):
        key, sep, value = term.partition("==") if "==" in term else term.partition("=")
        if sep and key.strip() == "metadata.name" and not key.endswith("!"):
            return value.strip()
    return ""


def request_attributes(
    method: str, path: str, query: Mapping[str, str | list[str]]
) -> RequestAttributes | None:
    """The attributes of a resource request, or ``None`` for a non-resource request."""
    parts = [unquote(part) for part in path.strip("/").split("/") if part]
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return None
    if parts[0] == "api":
        group, rest = "", parts[2:]
    else:
        if len(parts) < 4:
            return None
        group, rest = parts[1], parts[3:]
    verb = _METHOD_VERBS.get(method.upper(), "")
    if rest[0] == "watch":
        verb, rest = "watch", rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    if not rest:
        return None
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name and verb == "get":
        # The server parses the parameter as Go's strconv.ParseBool does.
        watch = (_first(query, "watch") or "").lower()
        verb = "watch" if watch in ("1", "t", "true") else "list"
        name = _selected_name(_first(query, "fieldSelector"))
    if not name and verb == "delete":
        verb = "deletecollection"
    return RequestAttributes(verb, group, resource, subresource, namespace, name)
