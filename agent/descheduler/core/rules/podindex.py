"""Pods indexed by namespace, label and topology domain: which pods a term selects, and where.

Why: an affinity term names the pods it points at by namespace and label selector, and the
rules ask where those pods run. Asked pod by pod against every other pod, as upstream's
``CheckPodsWithAntiAffinityExist`` does, a cycle costs pods x pods x terms: 3,000 pods with
20 terms each is 180 million label matches, and any pod author can create such pods. Here
the answer is looked up instead, as kube-scheduler's PreFilter state does for one pod, for
every pod of the cycle. Topology spread asks the same of a constraint's selector, for every pod
the offline plan places: how many of the pods it selects run on each node
(``running_node_counts``).

Shape: each namespace numbers its pods in the order they are added (a *slot*). A set of a
namespace's pods is a Python ``int`` used as a bitset over those numbers, so the rules'
questions are a few bitwise operations, each done in C over the namespace's pod count / 64
words:

- every label ``key=value`` and every label ``key`` has its pods (``In``, ``NotIn``,
  ``Exists`` and ``DoesNotExist`` are ``|``, ``& ~`` of those);
- every node and every pod name has its pods;
- a topology domain ``key=value`` (the nodes carrying that label) has the pods on its
  nodes, built the first time a term asks for that key.

A selector with an ``In`` requirement (``matchLabels`` is one) that names few pods is
answered by reading just those pods (``few_selected``), with no bitset at all: the usual
case, and the reason a huge namespace costs no more per term than a small one.

A pod leaves by its slot (``remove``): it stays numbered, so what a rule reads as "the first
pod" keeps the order the pods were added in. Position lists are kept for every set; a set of
more than ``SHORT`` pods is also kept as its bitset, updated as pods are added, so the common
sets are never rebuilt and the rare large ones are built once.

Cost: adding a pod is linear in its labels; a selector costs one operation per requirement
value, and each operation is done in C over the namespace's pods / 64 words (47 words at
3,000 pods: less than the interpreter's own cost of an operation; it would dominate only past
some tens of thousands of pods in one namespace, each with terms selecting many of them).
Memory is linear in the labels. ``operations`` counts the bitset operations and the pods
read one by one, for the tests that pin how the work grows.

Pure: model objects in, sets and answers out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain

from agent.descheduler.model.cluster import NodeInfo, PodInfo
from agent.kubesemantics.labelselector import Selector, matches
from agent.kubesemantics.wellknown import FINISHED_PHASES

SHORT = 48
"""Position lists up to this long are turned into a bitset when asked; longer ones keep it."""


@dataclass(frozen=True, slots=True)
class Slot:
    """Where one pod sits in the index: its namespace and its number there."""

    namespace: str
    position: int


def bits(positions: Iterable[int]) -> int:
    """The bitset of ``positions``: built in a buffer spanning only them, then shifted, so a
    few high positions cost one pass over the bitset's words, not one per position."""
    listed = list(positions)
    if len(listed) <= 1:
        return 1 << listed[0] if listed else 0
    low = min(listed)
    buffer = bytearray((max(listed) - low) // 8 + 1)
    for position in listed:
        offset = position - low
        buffer[offset >> 3] |= 1 << (offset & 7)
    return int.from_bytes(buffer, "little") << low


def is_ending(pod: PodInfo) -> bool:
    """Terminating (a deletion timestamp) or finished."""
    return pod.deleting or pod.phase in FINISHED_PHASES


def positions_of(mask: int) -> Iterator[int]:
    """The positions set in ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class _Postings:
    """Positions by value (a label value or key, a node name, a pod name), each as a list
    and, once longer than ``SHORT``, also as its bitset."""

    __slots__ = ("dense", "lists")

    def __init__(self) -> None:
        self.lists: dict[str, list[int]] = {}
        self.dense: dict[str, int] = {}

    def append(self, value: str, position: int) -> None:
        self.lists.setdefault(value, []).append(position)
        if value in self.dense:
            self.dense[value] |= 1 << position

    def mask(self, value: str) -> int:
        found = self.dense.get(value)
        if found is not None:
            return found
        listed = self.lists.get(value)
        if not listed:
            return 0
        mask = bits(listed)
        if len(listed) > SHORT:
            self.dense[value] = mask
        return mask


class NamespacePods:
    """One namespace's pods, numbered in the order they were added."""

    def __init__(self, nodes: Mapping[str, NodeInfo], index: PodIndex) -> None:
        self._nodes = nodes
        self._index = index
        self.pods: list[PodInfo] = []
        self._removed = 0
        self._gone: set[int] = set()
        """The same positions as ``_removed``, each looked up without a bitset operation."""
        self.ending = 0
        """The pods added terminating or finished: topology spread does not count them."""
        self._alive: int | None = 0
        """The pods added and not removed; ``None`` after an add until asked again (made on
        use, so that adding many pods costs no bitset operation each)."""
        self._labels: dict[str, _Postings] = {}
        """Label key -> value -> the pods carrying ``key=value``."""
        self._carrying = _Postings()
        """Label key -> the pods carrying that key, whatever the value."""
        self._on_node = _Postings()
        self._names = _Postings()
        self._domains: dict[str, _Postings] = {}
        """Topology key -> value -> the pods on the nodes carrying ``key=value`` (a key's
        table is made the first time it is asked for)."""

    def add(self, pod: PodInfo) -> int:
        position = len(self.pods)
        self.pods.append(pod)
        self._alive = None
        for key, value in pod.labels.items():
            postings = self._labels.get(key)
            if postings is None:
                postings = self._labels[key] = _Postings()
            postings.append(value, position)
            self._carrying.append(key, position)
        self._on_node.append(pod.node_name, position)
        self._names.append(pod.name, position)
        if is_ending(pod):
            self.ending |= 1 << position
        node = self._nodes.get(pod.node_name)
        if node is not None:
            for key, domain in self._domains.items():
                found = node.labels.get(key)
                if found is not None:
                    domain.append(found, position)
        return position

    def remove(self, position: int) -> None:
        bit = 1 << position
        self._gone.add(position)
        self._removed |= bit
        if self._alive is not None:
            self._alive &= ~bit

    @property
    def alive(self) -> int:
        """The pods added and not removed."""
        if self._alive is None:
            self._alive = ((1 << len(self.pods)) - 1) & ~self._removed
        return self._alive

    # -- sets ------------------------------------------------------------------------------

    def selected(self, selector: Selector | None, within: int | None = None) -> int:
        """The pods here (not removed, and of ``within`` if given) that ``selector``
        selects; a ``None`` selector selects none."""
        if selector is None:
            return 0
        mask = self.alive if within is None else self.alive & within
        for requirement in selector:
            if not mask:
                return 0
            self._index.operations += 1
            if requirement.operator in ("Exists", "DoesNotExist"):
                carrying = self._carrying.mask(requirement.key)
                mask = mask & carrying if requirement.operator == "Exists" else mask & ~carrying
                continue
            postings = self._labels.get(requirement.key)
            chosen = 0
            if postings is not None:
                for value in requirement.values:
                    chosen |= postings.mask(value)
            mask = mask & chosen if requirement.operator == "In" else mask & ~chosen
        return mask

    def few_selected(self, selector: Selector | None) -> list[int] | None:
        """The positions, lowest first, of the pods here (not removed) that ``selector``
        selects, when one of its ``In`` requirements names at most ``SHORT`` pods: those
        are read one by one, with no bitset operation. ``None`` when no requirement is that
        narrow (then ``selected`` answers)."""
        if selector is None:
            return []
        narrowest: list[list[int]] | None = None
        narrowest_size = SHORT + 1
        for requirement in selector:
            if requirement.operator != "In":
                continue
            postings = self._labels.get(requirement.key)
            if postings is None:
                return []
            found: list[list[int]] = []
            size = 0
            for value in requirement.values:
                listed = postings.lists.get(value)
                if listed:
                    found.append(listed)
                    size += len(listed)
                    if size >= narrowest_size:
                        break
            if size < narrowest_size:
                narrowest, narrowest_size = found, size
        if narrowest is None:
            return None
        self._index.operations += narrowest_size
        candidates = narrowest[0] if len(narrowest) == 1 else sorted(chain(*narrowest))
        return [
            position
            for position in candidates
            if position not in self._gone and matches(selector, self.pods[position].labels)
        ]

    def on_node(self, name: str) -> int:
        """The pods added on node ``name`` (removed ones included)."""
        return self._on_node.mask(name)

    def named(self, name: str) -> int:
        """The pods named ``name`` (removed ones included)."""
        return self._names.mask(name)

    def in_domain(self, key: str, value: str) -> int:
        """The pods on the nodes carrying ``key=value`` (removed ones included)."""
        return self._domain(key).mask(value)

    def first(self, mask: int) -> PodInfo:
        """The pod of ``mask`` added first."""
        return self.pods[(mask & -mask).bit_length() - 1]

    def domain_counts(self, mask: int, key: str) -> Counter[str]:
        """How many pods of ``mask`` run in each domain of ``key`` (a pod on a node without
        the key, or on a node not known, counts in none)."""
        nodes = self._nodes

        def value_of(pod: PodInfo) -> str | None:
            node = nodes.get(pod.node_name)
            return node.labels.get(key) if node is not None else None

        if not mask:
            return Counter()
        return self._count(mask, self._domain(key), value_of)

    def node_counts(self, mask: int) -> Counter[str]:
        """How many pods of ``mask`` run on each node."""
        return self._count(mask, self._on_node, lambda pod: pod.node_name)

    def _count(
        self, mask: int, postings: _Postings, value_of: Callable[[PodInfo], str | None]
    ) -> Counter[str]:
        """Pod by pod when the pods are fewer than the values, else value by value: either
        way no more steps than the smaller of the two."""
        counts: Counter[str] = Counter()
        if not mask:
            return counts
        many = mask.bit_count()
        if many <= len(postings.lists):
            self._index.operations += many
            for position in positions_of(mask):
                value = value_of(self.pods[position])
                if value is not None:
                    counts[value] += 1
            return counts
        self._index.operations += len(postings.lists)
        for value in postings.lists:
            found = (mask & postings.mask(value)).bit_count()
            if found:
                counts[value] = found
        return counts

    def _domain(self, key: str) -> _Postings:
        domain = self._domains.get(key)
        if domain is None:
            domain = self._domains[key] = _Postings()
            self._index.operations += len(self._on_node.lists)
            for name, listed in self._on_node.lists.items():
                node = self._nodes.get(name)
                value = node.labels.get(key) if node is not None else None
                if value is not None:
                    for position in listed:
                        domain.append(value, position)
        return domain


class PodIndex:
    """Pods by namespace (``NamespacePods``), on the nodes of ``nodes`` or elsewhere (a pod on
    a node not in ``nodes`` is in no topology domain). A namespace is indexed the first time
    it is asked for: until then its pods are only listed, so the namespaces no term names
    cost one list entry a pod."""

    def __init__(self, nodes: Mapping[str, NodeInfo], pods: Iterable[PodInfo] = ()) -> None:
        self.nodes = nodes
        self.operations = 0
        """Bitset operations and pods read one by one, so far (the tests' measure of work)."""
        self._spaces: dict[str, NamespacePods] = {}
        self._waiting: dict[str, list[PodInfo]] = {}
        self._waiting_removed: dict[str, list[int]] = {}
        for pod in pods:
            self.add(pod)

    def add(self, pod: PodInfo) -> Slot:
        space = self._spaces.get(pod.namespace)
        if space is not None:
            return Slot(pod.namespace, space.add(pod))
        waiting = self._waiting.setdefault(pod.namespace, [])
        waiting.append(pod)
        return Slot(pod.namespace, len(waiting) - 1)

    def remove(self, slot: Slot) -> None:
        space = self._spaces.get(slot.namespace)
        if space is not None:
            space.remove(slot.position)
        else:
            self._waiting_removed.setdefault(slot.namespace, []).append(slot.position)

    def namespace(self, name: str) -> NamespacePods | None:
        """The namespace's pods, or ``None`` when none was ever added there."""
        space = self._spaces.get(name)
        if space is None:
            waiting = self._waiting.pop(name, None)
            if waiting is None:
                return None
            space = self._spaces[name] = NamespacePods(self.nodes, self)
            for pod in waiting:
                space.add(pod)
            for position in self._waiting_removed.pop(name, ()):
                space.remove(position)
            self.operations += len(waiting)
        return space

    def domain_counts(
        self,
        namespaces: Iterable[str],
        selector: Selector | None,
        key: str,
        *,
        excluding: Iterable[Slot] = (),
    ) -> Counter[str]:
        """How many pods in ``namespaces`` that ``selector`` selects (but those at
        ``excluding``) run in each domain of ``key``."""
        left_out: dict[str, set[int]] = {}
        for slot in excluding:
            left_out.setdefault(slot.namespace, set()).add(slot.position)
        counts: Counter[str] = Counter()
        for name in namespaces:
            space = self.namespace(name)
            if space is None:
                continue
            few = space.few_selected(selector)
            if few is not None:
                skipped = left_out.get(name, set())
                for position in few:
                    if position not in skipped:
                        value = self.value_at(space.pods[position], key)
                        if value is not None:
                            counts[value] += 1
                continue
            mask = space.selected(selector)
            if mask and name in left_out:
                mask &= ~bits(left_out[name])
            counts.update(space.domain_counts(mask, key))
        return counts

    def running_node_counts(self, namespace: str, selector: Selector | None) -> Counter[str]:
        """How many pods of ``namespace`` that ``selector`` selects run on each node, leaving
        out terminating and finished ones: what topology spread counts per node
        (``countPodsMatchSelector``). A ``None`` selector selects none."""
        space = self.namespace(namespace)
        if space is None:
            return Counter()
        few = space.few_selected(selector)
        if few is None:
            return space.node_counts(space.selected(selector) & ~space.ending)
        counts: Counter[str] = Counter()
        for position in few:
            pod = space.pods[position]
            if not is_ending(pod):
                counts[pod.node_name] += 1
        return counts

    def value_at(self, pod: PodInfo, key: str) -> str | None:
        """The value of ``key`` on the pod's node (``None``: no such label, or node)."""
        node = self.nodes.get(pod.node_name)
        return node.labels.get(key) if node is not None else None
