"""The API's verbs as blocking raw-JSON calls: get, list, create, replace, patch, delete,
evict and watch.

Why a module of its own: each verb is where a request is shaped (its path, query and body,
paging of a list, the Eviction object, a watch's parameters); how it travels is
``agent.kube.transport``, whose ``HttpTransport`` ``KubeApi`` extends, and what a failure
becomes is ``agent.kube.errors``. Answers are plain JSON (``agent.kube.jsontypes``); a watch
hands back a ``agent.kube.watchstream.WatchStream``. These methods block; async code reaches
them through ``AsyncKube``.
"""

from __future__ import annotations

import json
from typing import Any

from agent.kube.jsontypes import Decode, JsonObject
from agent.kube.resources import PODS, Resource
from agent.kube.transport import PATCH_TYPES, HttpTransport
from agent.kube.watchstream import WatchStream


class KubeApi(HttpTransport):
    """Raw JSON verbs over the official client's ``ApiClient`` (thread-safe, blocking)."""

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> JsonObject:
        return self.request("GET", resource.path(namespace=namespace, name=name))

    def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        page_size: int = 500,
        decode: Decode = json.loads,
        timeout: float | None = None,
    ) -> JsonObject:
        """List every page; returns ``{"items": [...], "metadata": {"resourceVersion": ...}}``.

        ``timeout`` bounds each page's request (default: the client's request timeout).

        ``decode`` reads each page's bytes; it must return the page's JSON shape (a dict with
        ``items`` and ``metadata``), though it may leave out fields nobody reads. A decoder
        that projects as it decodes returns ``entries`` instead of ``items``; the answer
        then has ``entries`` too."""
        query: dict[str, Any] = {
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "resourceVersion": resource_version or None,
        }
        if resource_version != "0":  # the watch cache ignores limit for rv=0 anyway
            query["limit"] = page_size
        collected: list[Any] = []
        while True:
            page = self.request(
                "GET",
                resource.path(namespace=namespace),
                query=query,
                decode=decode,
                timeout=timeout,
            )
            metadata = page.get("metadata") or {}
            token = metadata.get("continue")
            field = "entries" if "entries" in page else "items"
            if not token and not collected:
                # One page (always so at resourceVersion=0): hand it over as decoded, so
                # a decoder's lazy ``items`` stays lazy.
                return {field: page.get(field) or [], "metadata": metadata}
            # Several pages: each is taken in whole before the next is fetched, so only
            # one page's bytes are held at a time.
            collected.extend(page.get(field) or [])
            if not token:
                return {field: collected, "metadata": metadata}
            query = {**query, "continue": token, "resourceVersion": None}

    def create(
        self, resource: Resource, obj: JsonObject, namespace: str | None = None
    ) -> JsonObject:
        return self.request("POST", resource.path(namespace=namespace), body=obj)

    def replace(
        self, resource: Resource, obj: JsonObject, namespace: str | None = None
    ) -> JsonObject:
        """PUT the whole object; with ``metadata.resourceVersion`` set, a stale copy is 409."""
        name = str((obj.get("metadata") or {}).get("name", ""))
        return self.request("PUT", resource.path(namespace=namespace, name=name), body=obj)

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        patch_type: str = "json",
        namespace: str | None = None,
        subresource: str = "",
        timeout: float | None = None,
    ) -> JsonObject:
        return self.request(
            "PATCH",
            resource.path(namespace=namespace, name=name, subresource=subresource),
            body=patch,
            content_type=PATCH_TYPES[patch_type],
            timeout=timeout,
        )

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        preconditions: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> JsonObject:
        body: JsonObject = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if preconditions:
            body["preconditions"] = preconditions
        return self.request(
            "DELETE", resource.path(namespace=namespace, name=name), body=body, timeout=timeout
        )

    def evict(
        self,
        name: str,
        namespace: str,
        *,
        grace_period_seconds: int | None = None,
        timeout: float | None = None,
    ) -> None:
        """POST a policy/v1 Eviction; the answer (a Status) is not read."""
        body: JsonObject = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if grace_period_seconds is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": grace_period_seconds}
        self.send(
            "POST",
            PODS.path(namespace=namespace, name=name, subresource="eviction"),
            body=body,
            timeout=timeout,
        )

    def watch(
        self,
        resource: Resource,
        *,
        resource_version: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        read_timeout: float = 90.0,
        decode: Decode = json.loads,
    ) -> WatchStream:
        """Open a watch; the server closes it after ``timeout_seconds``, and a silent
        connection fails after ``read_timeout`` so a half-open socket cannot hang us."""
        raw = self.open(
            "GET",
            resource.path(namespace=namespace),
            query={
                "watch": "true",
                "resourceVersion": resource_version or None,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": timeout_seconds,
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
            },
            timeout=(self.request_timeout, read_timeout),
        )
        return WatchStream(raw, decode)
