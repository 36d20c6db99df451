"""The API verbs (get, list, watch, create, update, patch, delete, evict, bind) over the store.

This is the request-scope layer of the real server (handlers/*.go): request/body consistency
checks, query parameters (selectors, pagination, dry run, delete options), patch dispatch by
content type, and the shapes of responses (lists without item kinds, `Status` for deletes).
The HTTP handler calls it with parsed requests; the in-process API reuses the patch dispatch.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

import yaml

from .deletion import DeleteOptions
from .eviction import Evictions
from .objects import deep_copy, meta, name_of, namespace_of, now, rfc3339
from .patches import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    apply_json_patch,
    merge_patch,
    strategic_merge_patch,
)
from .resources import ResourceType
from .selectors import object_filter, parse_field_selector, parse_label_selector
from .status import (
    ApiError,
    bad_request,
    conflict,
    expired,
    method_not_allowed,
    not_found,
    success_status,
    unsupported_media_type,
)
from .store import Store
from .watch import WatchSession, WatchSpec, present

JSON = dict[str, Any]
Query = dict[str, str]

CONTINUE_EXPIRED_MESSAGE = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list."
)


@dataclass(frozen=True)
class ResourceRoute:
    """A request addressed to a resource.

    Paths look like `/api[s]/.../[namespaces/<ns>/]<plural>[/<name>[/<sub>]]`.
    """

    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None
    watch_path: bool = False


def _flag(query: Query, key: str) -> bool | None:
    value = query.get(key)
    if value is None or value == "":
        return None
    return value.lower() in ("true", "1")


def _int_param(query: Query, key: str) -> int | None:
    value = query.get(key)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError as exc:
        raise bad_request(f"invalid value for {key}: {value!r}") from exc


def _dry_run(query: Query) -> bool:
    return query.get("dryRun") == "All"


def _strip_type_meta(obj: JSON) -> JSON:
    obj.pop("apiVersion", None)
    obj.pop("kind", None)
    return obj


def _encode_continue(rv: int, start: tuple[str, str]) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": f"{start[0]}/{start[1]}\x00"})
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, _, name = str(data["start"]).rstrip("\x00").partition("/")
        return int(data["rv"]), (namespace, name)
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise bad_request(f"continue key is not valid: {exc}") from exc


def apply_patch(rt: ResourceType, current: JSON, patch: Any, content_type: str) -> JSON:
    """Apply a patch body of the given content type to a copy of `current`."""
    kind = content_type.partition(";")[0].strip().lower()
    if kind == JSON_PATCH:
        return apply_json_patch(current, patch)
    if kind == MERGE_PATCH:
        if not isinstance(patch, dict):
            raise bad_request("merge patch must be a JSON object")
        result: JSON = merge_patch(current, patch)
        return result
    if kind == STRATEGIC_MERGE_PATCH and not rt.custom:
        return strategic_merge_patch(current, patch)
    if kind == APPLY_PATCH:
        # Simplification: server-side apply is approximated by a strategic merge (merge patch
        # for custom resources) of the applied configuration; no field ownership/conflicts.
        if not isinstance(patch, dict):
            raise bad_request("error decoding YAML: the applied configuration must be an object")
        if rt.custom:
            applied: JSON = merge_patch(current, patch)
            return applied
        return strategic_merge_patch(current, patch)
    accepted = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
    if not rt.custom:
        accepted.insert(2, STRATEGIC_MERGE_PATCH)
    raise unsupported_media_type(kind, accepted)


def parse_patch_body(raw: bytes, content_type: str) -> Any:
    """Decode a PATCH body (JSON, or YAML for apply patches)."""
    try:
        if content_type.partition(";")[0].strip().lower() == APPLY_PATCH:
            return yaml.safe_load(raw.decode() or "{}")
        return json.loads(raw or b"null")
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"error decoding patch: {exc}") from exc


class Operations:
    """The verbs, bound to one store."""

    def __init__(self, store: Store, evictions: Evictions, bookmark_interval: float) -> None:
        self.store = store
        self.evictions = evictions
        self.bookmark_interval = bookmark_interval

    # --- reads --------------------------------------------------------------------------------

    def get(self, route: ResourceRoute) -> JSON:
        """GET one object (also its `status` subresource)."""
        assert route.name is not None
        return present(self.store.get(route.rt, route.namespace or "", route.name), route.rt)

    def list(self, route: ResourceRoute, query: Query) -> JSON:
        """LIST with selectors and `limit`/`continue` pagination."""
        rt = route.rt
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"), rt)
        items, list_rv = self.store.list(
            rt, route.namespace, object_filter(route.namespace, labels, fields)
        )
        token = query.get("continue")
        if token:
            token_rv, start = _decode_continue(token)
            if token_rv < self.store.compacted_rv:
                raise expired(CONTINUE_EXPIRED_MESSAGE)
            # Simplification: later pages show current objects, not the first page's snapshot.
            items = [i for i in items if (namespace_of(i), name_of(i)) > start]
            list_rv = token_rv
        metadata: JSON = {"resourceVersion": str(list_rv)}
        limit = _int_param(query, "limit")
        if limit and limit > 0 and len(items) > limit:
            remaining = len(items) - limit
            items = items[:limit]
            metadata["continue"] = _encode_continue(
                list_rv, (namespace_of(items[-1]), name_of(items[-1]))
            )
            if labels.empty and not fields:
                metadata["remainingItemCount"] = remaining
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": metadata,
            "items": [_strip_type_meta(present(i, rt)) for i in items],
        }

    def watch(self, route: ResourceRoute, query: Query) -> WatchSession:
        """Prepare a WATCH (the caller streams what the session yields)."""
        send_initial = _flag(query, "sendInitialEvents")
        if send_initial and query.get("resourceVersionMatch") != "NotOlderThan":
            raise ApiError(
                422,
                "Invalid",
                'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )
        timeout = float(query.get("timeoutSeconds") or 0)
        spec = WatchSpec(
            rt=route.rt,
            namespace=route.namespace,
            labels=parse_label_selector(query.get("labelSelector")),
            fields=parse_field_selector(query.get("fieldSelector"), route.rt),
            resource_version=query.get("resourceVersion"),
            allow_bookmarks=bool(_flag(query, "allowWatchBookmarks")),
            timeout_seconds=timeout if timeout > 0 else None,  # 0 means the server default
            send_initial_events=send_initial,
        )
        return WatchSession(self.store, spec, self.bookmark_interval)

    # --- writes -------------------------------------------------------------------------------

    def _bind_namespace(self, route: ResourceRoute, body: JSON) -> None:
        metadata = meta(body)
        if not route.rt.namespaced:
            return
        body_ns = metadata.get("namespace")
        if body_ns and body_ns != route.namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        metadata["namespace"] = route.namespace

    @staticmethod
    def _check_type(rt: ResourceType, body: JSON) -> None:
        kind, api_version = body.get("kind"), body.get("apiVersion")
        if kind is not None and kind != rt.kind:
            raise bad_request(
                f'{kind} in version "{rt.version}" cannot be handled as a {rt.kind}: the kind of '
                f"the object does not match the endpoint"
            )
        if api_version is not None and api_version != rt.api_version:
            group = api_version.rpartition("/")[0]
            if group != rt.group:
                raise bad_request(
                    f"the API version in the data ({api_version}) does not match the expected "
                    f"API version ({rt.api_version})"
                )

    def create(self, route: ResourceRoute, body: Any, query: Query) -> JSON:
        """POST to a collection (201)."""
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        if route.rt.namespaced and route.namespace is None:
            raise method_not_allowed()
        self._check_type(route.rt, body)
        body = deep_copy(body)
        self._bind_namespace(route, body)
        created = self.store.create(route.rt, body, dry_run=_dry_run(query))
        return present(created, route.rt)

    def update(self, route: ResourceRoute, body: Any, query: Query) -> JSON:
        """PUT to an object or its status (200)."""
        assert route.name is not None
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        self._check_type(route.rt, body)
        body = deep_copy(body)
        if name_of(body) != route.name:
            raise bad_request(
                f"the name of the object ({name_of(body)}) does not match the name on the URL "
                f"({route.name})"
            )
        self._bind_namespace(route, body)
        updated = self.store.update(
            route.rt, body, subresource=route.subresource, dry_run=_dry_run(query)
        )
        return present(updated, route.rt)

    def patch(
        self, route: ResourceRoute, raw: bytes, content_type: str, query: Query
    ) -> tuple[int, JSON]:
        """PATCH an object or its status; apply patches create missing objects (201)."""
        assert route.name is not None
        rt = route.rt
        kind = content_type.partition(";")[0].strip().lower()
        patch = parse_patch_body(raw, content_type)
        if kind == APPLY_PATCH and not query.get("fieldManager"):
            raise ApiError(
                422,
                "Invalid",
                'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required '
                "for apply patch",
            )
        namespace = route.namespace or ""
        with self.store.locked():
            if kind == APPLY_PATCH and self.store.peek(rt, namespace, route.name) is None:
                body = deep_copy(patch)
                meta(body)["name"] = route.name
                self._bind_namespace(route, body)
                return 201, present(self.store.create(rt, body, dry_run=_dry_run(query)), rt)
            result = self.store.mutate(
                rt,
                namespace,
                route.name,
                lambda current: apply_patch(rt, current, patch, content_type),
                subresource=route.subresource,
                dry_run=_dry_run(query),
            )
        return 200, present(result, rt)

    def delete(self, route: ResourceRoute, body: Any, query: Query) -> JSON:
        """DELETE one object: the object (pods, CRs, kept objects) or a success `Status`."""
        assert route.name is not None
        options = DeleteOptions.from_body(
            body if isinstance(body, dict) else None,
            _int_param(query, "gracePeriodSeconds"),
            _dry_run(query),
        )
        obj, removed = self.store.delete(route.rt, route.namespace or "", route.name, options)
        if removed and not route.rt.returns_deleted_object:
            details: JSON = {"name": route.name}
            if route.rt.group:
                details["group"] = route.rt.group
            details["kind"] = route.rt.plural
            details["uid"] = obj["metadata"].get("uid")
            return success_status(200, details)
        return present(obj, route.rt)

    def delete_collection(self, route: ResourceRoute, body: Any, query: Query) -> JSON:
        """DELETE a collection (honouring selectors); answers with the list of deleted objects."""
        rt = route.rt
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"), rt)
        options = DeleteOptions.from_body(
            body if isinstance(body, dict) else None,
            _int_param(query, "gracePeriodSeconds"),
            _dry_run(query),
        )
        deleted: list[JSON] = []
        with self.store.locked():
            items, _ = self.store.list(
                rt, route.namespace, object_filter(route.namespace, labels, fields)
            )
            for item in items:
                try:
                    obj, _ = self.store.delete(rt, namespace_of(item), name_of(item), options)
                except ApiError as exc:
                    if exc.code != 404:
                        raise
                    continue
                deleted.append(_strip_type_meta(present(obj, rt)))
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": {"resourceVersion": str(self.store.resource_version)},
            "items": deleted,
        }

    def evict(self, route: ResourceRoute, body: Any, query: Query) -> JSON:
        """POST pods/<name>/eviction."""
        assert route.name is not None
        assert route.namespace is not None
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be an Eviction object")
        return self.evictions.evict(route.namespace, route.name, body, dry_run=_dry_run(query))

    def bind(self, route: ResourceRoute, body: Any, query: Query) -> JSON:
        """POST pods/<name>/binding: assign an unscheduled pod to a node (201)."""
        assert route.name is not None
        assert route.namespace is not None
        target = (body or {}).get("target") or {} if isinstance(body, dict) else {}
        node = target.get("name")
        if not node:
            raise bad_request("a Binding needs target.name")
        self.bind_pod(route.rt, route.namespace, route.name, str(node), dry_run=_dry_run(query))
        return success_status(201)

    def bind_pod(
        self, rt: ResourceType, namespace: str, name: str, node: str, *, dry_run: bool = False
    ) -> JSON:
        """Set spec.nodeName and the PodScheduled condition (the scheduler's binding)."""

        def assign(pod: JSON) -> JSON:
            spec = pod.setdefault("spec", {})
            if spec.get("nodeName"):
                raise conflict(
                    rt, name, f'pod {name} is already assigned to node "{spec["nodeName"]}"'
                )
            spec["nodeName"] = node
            status = pod.setdefault("status", {})
            conditions = [
                c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"
            ]
            conditions.append(
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(now())}
            )
            status["conditions"] = conditions
            return pod

        if self.store.peek(rt, namespace, name) is None:
            raise not_found(rt, name)
        return self.store.mutate(
            rt, namespace, name, assign, subresource="binding", dry_run=dry_run
        )
