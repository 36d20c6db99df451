"""The shapes every call of the adapter hands over: plain JSON, never the client's models.

Why a module of its own: the transport, the watch stream, the verbs and every caller above
them speak these two types; none of those modules is the home of the others' vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

JsonObject = dict[str, Any]
"""One API object (or a list answer, or a watch event), as ``json.loads`` reads it."""

Decode = Callable[[bytes], Any]
"""Turns one response body (a list page, or one watch event line) into JSON-shaped data.
The default is ``json.loads``; a cache may pass a decoder that keeps only the fields it
reads (see ``agent.kube.reflector``)."""
