"""What a pod list item is decoded into: only the fields the projection reads.

Every sub-object that repeats across the pods of one template (labels, owner references,
resources, tolerations, affinity) stays a raw slice of the page's bytes (``msgspec.Raw``):
equal slices key the projector's memos, and are compared with the previous pod's before
anything is decoded. Unknown fields are skipped while parsing.

``LeanPodItem`` leaves out the container statuses, for a policy whose plugins never read the
pod-state details; ``PodItem`` has them.
"""

from __future__ import annotations

from typing import Any

import msgspec

NULL = msgspec.Raw(b"null")
"""A part the pod does not have (the default of every raw field)."""


class _Item(msgspec.Struct, rename="camel", gc=False):
    """Base: camelCase names on the wire; unknown fields are skipped while parsing."""


class _FrozenItem(msgspec.Struct, rename="camel", gc=False, frozen=True):
    """As ``_Item``, hashable: the struct itself can be part of a memo key."""


class ItemMeta(_Item):
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: msgspec.Raw = NULL
    annotations: dict[str, str] | None = None
    owner_references: msgspec.Raw = NULL


class ItemContainer(_Item):
    image: str | None = None
    resources: msgspec.Raw = NULL
    restart_policy: str | None = None


class ItemVolume(_Item):
    """Only what tells node-local storage and claims apart (not the name, which is unique)."""

    empty_dir: Any = None
    host_path: Any = None
    persistent_volume_claim: Any = None


class ItemSpec(_Item):
    node_name: str | None = None
    priority: int | None = None
    priority_class_name: str | None = None
    node_selector: msgspec.Raw = NULL
    affinity: msgspec.Raw = NULL
    tolerations: msgspec.Raw = NULL
    containers: list[ItemContainer] | None = None
    init_containers: list[ItemContainer] | None = None
    overhead: msgspec.Raw = NULL
    resources: msgspec.Raw = NULL
    volumes: list[ItemVolume] | None = None
    resource_claims: Any = None
    topology_spread_constraints: msgspec.Raw = NULL


class ItemCondition(_Item):
    type: str | None = None
    status: str | None = None
    reason: str | None = None
    last_transition_time: str | None = None


# The container statuses are frozen (hashable in C) and decoded as tuples: the tuple of a
# pod's statuses is itself the status memo's key part, with no Python loop per container.
class ItemWaiting(_FrozenItem, frozen=True):
    reason: str | None = None


class ItemTerminated(_FrozenItem, frozen=True):
    reason: str | None = None
    exit_code: int | None = None


class ItemContainerState(_FrozenItem, frozen=True):
    waiting: ItemWaiting | None = None
    terminated: ItemTerminated | None = None


class ItemContainerStatus(_FrozenItem, frozen=True):
    restart_count: int | None = None
    state: ItemContainerState | None = None


class LeanItemStatus(_Item):
    """What a pod's status says when no configured plugin reads the pod-state details."""

    phase: str | None = None
    start_time: str | None = None
    qos_class: str | None = None
    reason: str | None = None
    conditions: list[ItemCondition] | None = None


class ItemStatus(LeanItemStatus):
    container_statuses: tuple[ItemContainerStatus, ...] | None = None
    init_container_statuses: tuple[ItemContainerStatus, ...] | None = None
    ephemeral_container_statuses: tuple[ItemContainerStatus, ...] | None = None


class LeanPodItem(_Item):
    metadata: ItemMeta | None = None
    spec: ItemSpec | None = None
    status: LeanItemStatus | None = None


class PodItem(LeanPodItem):
    status: ItemStatus | None = None


EMPTY_META = ItemMeta()
EMPTY_SPEC = ItemSpec()
EMPTY_STATUS = ItemStatus()
