"""The model's two smallest values, below every object that holds them.

``ResourceList`` is how the model holds amounts, ``EMPTY_MAP`` the one empty map every object
without a map shares. Both ``cluster`` (the objects) and ``metricsusage`` (what a metrics
source said) hold them, and ``cluster`` holds a ``metricsusage`` in each snapshot: here they
import neither from the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

ResourceList = Mapping[str, int]
"""``cpu`` in millicores, ``memory`` and ``ephemeral-storage`` in bytes, ``pods`` a count;
extended resources in their own unit (rounded up, like ``Quantity.Value()``)."""

EMPTY_MAP: Mapping[str, Any] = MappingProxyType({})
"""Shared by every object without the map; read-only so no one can fill it for all."""
