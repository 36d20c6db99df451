"""Discovery documents: /api, /apis, per-group-version resource lists, /version.

Enough for kubectl-style discovery (the legacy, unaggregated format; clients asking for the
aggregated v2 format fall back to it because the Content-Type says plain JSON).
"""

from __future__ import annotations

from typing import Any

from .resources import ResourceRegistry, ResourceType

JSON = dict[str, Any]

# Subresource -> (kind, group, version, verbs) when it differs from the parent's.
_SUBRESOURCE_SHAPES: dict[str, tuple[str | None, str | None, str | None, list[str]]] = {
    "status": (None, None, None, ["get", "patch", "update"]),
    "eviction": ("Eviction", "policy", "v1", ["create"]),
    "binding": ("Binding", "", "v1", ["create"]),
    "scale": ("Scale", "autoscaling", "v1", ["get", "patch", "update"]),
    "finalize": (None, None, None, ["update"]),
}


def version_info(git_version: str) -> JSON:
    """The `/version` document."""
    core = git_version.lstrip("v").split("-")[0].split(".")
    return {
        "major": core[0],
        "minor": core[1] if len(core) > 1 else "0",
        "gitVersion": git_version,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def _resource_entries(rt: ResourceType) -> list[JSON]:
    main: JSON = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": rt.verbs(),
    }
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    entries = [main]
    for sub in sorted(rt.subresources):
        kind, group, version, verbs = _SUBRESOURCE_SHAPES.get(sub, (None, None, None, ["get"]))
        entry: JSON = {
            "name": f"{rt.plural}/{sub}",
            "singularName": "",
            "namespaced": rt.namespaced,
            "kind": kind or rt.kind,
            "verbs": verbs,
        }
        if group is not None:
            entry["group"] = group
            entry["version"] = version
        entries.append(entry)
    return entries


def document(path: str, registry: ResourceRegistry, server_address: str) -> JSON | None:
    """The discovery document served at `path`, or None if it is not a discovery path."""
    parts = [p for p in path.split("/") if p]
    if parts == ["api"]:
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
            ],
        }
    if parts == ["apis"]:
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [_group(g, vs) for g, vs in registry.groups() if g],
        }
    if len(parts) == 2 and parts[0] == "apis":
        versions = dict(registry.groups()).get(parts[1])
        return (
            {"kind": "APIGroup", "apiVersion": "v1", **_group(parts[1], versions)}
            if versions
            else None
        )
    if parts == ["api", "v1"] or (len(parts) == 3 and parts[0] == "apis"):
        group, version = ("", "v1") if parts[0] == "api" else (parts[1], parts[2])
        return _resource_list(registry, group, version)
    return None


def _resource_list(registry: ResourceRegistry, group: str, version: str) -> JSON | None:
    types = registry.in_group_version(group, version)
    if not types:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": [entry for rt in types for entry in _resource_entries(rt)],
    }


def _group(name: str, versions: list[str]) -> JSON:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}
