"""URL paths to resource routes, following the real server's path layout.

`/api/v1/...` is the core group, `/apis/<group>/<version>/...` the others; an optional `watch/`
segment (the legacy watch paths) precedes `namespaces/<ns>/<plural>` or `<plural>`, followed by
an optional name and subresource. `/api/v1/namespaces/<name>/status` addresses a namespace's
subresource, not a resource called `status`.
"""

from __future__ import annotations

from urllib.parse import unquote

from .operations import ResourceRoute
from .resources import ResourceRegistry
from .status import path_not_found

_NAMESPACE_SUBRESOURCES = ("status", "finalize")


def is_api_path(path: str) -> bool:
    """Whether the path is under `/api` or `/apis` (as opposed to /version, /healthz...)."""
    return path == "/api" or path.startswith(("/api/", "/apis"))


def parse_resource_path(path: str, registry: ResourceRegistry) -> ResourceRoute | None:
    """The resource route of a path, None for discovery paths; 404 `ApiError` if unknown."""
    parts = [unquote(p) for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if not rest:
        return None
    watch_path = rest[0] == "watch"
    if watch_path:
        rest = rest[1:]
    namespace: str | None = None
    is_namespace_subresource = (
        group == ""
        and len(rest) == 3
        and rest[0] == "namespaces"
        and rest[2] in _NAMESPACE_SUBRESOURCES
    )
    if len(rest) >= 3 and rest[0] == "namespaces" and not is_namespace_subresource:
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise path_not_found()
    rt = registry.lookup(group, version, rest[0])
    if rt is None or (namespace is not None and not rt.namespaced):
        raise path_not_found()
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    if subresource is not None and subresource not in rt.subresources:
        raise path_not_found()
    if name is not None and rt.namespaced and namespace is None:
        raise path_not_found()
    return ResourceRoute(rt, namespace, name, subresource, watch_path)
