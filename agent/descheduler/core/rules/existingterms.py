"""The affinity terms of the pods in place, and in which topology domains their owners run.

kube-scheduler, before it filters or scores nodes for a new pod, reads the terms of the pods
already placed: which of them select the new pod, and where their owners are (its
PreFilter's "existing anti-affinity counts", its PreScore's topology scores). Read owner by
owner for every new pod, that is every placed pod's terms per placement; the offline plan
places one pod per eviction, thrice (its window's orders), so it would be pods x terms x
evictions.

Here the terms are kept by value (equal terms of many owners, as every replica of a
Deployment has, are one entry), each with how many owners run in each domain of its
topology key, kept up to date as owners come and go. A new pod finds the terms that may
select it through their first ``In`` (or ``Exists``) requirement, looked up by the pod's own
labels, and each such term is asked once; a term with neither kind of requirement (only
``NotIn``/``DoesNotExist``, or ``{}``) is asked for every new pod.

Pure: terms and node labels in, counts out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import Generic, Protocol, TypeVar

from agent.descheduler.model.cluster import NodeInfo
from agent.kubesemantics.labelselector import Selector


class Term(Hashable, Protocol):
    """What a kept term must say: which pods it selects by label, and its topology key."""

    @property
    def selector(self) -> Selector | None: ...

    @property
    def topology_key(self) -> str: ...


T = TypeVar("T", bound=Term)

Anchor = tuple[str, str | None]
"""A label ``(key, value)`` a pod must carry to be selected; ``(key, None)``: the key."""


def anchors(selector: Selector) -> list[Anchor] | None:
    """The labels one of which a pod must carry for ``selector`` to select it: the values of
    its first ``In`` requirement, else the key of its first ``Exists``; ``None`` when it has
    neither (it may select a pod whatever its labels)."""
    for requirement in selector:
        if requirement.operator == "In":
            return [(requirement.key, value) for value in sorted(requirement.values)]
    for requirement in selector:
        if requirement.operator == "Exists":
            return [(requirement.key, None)]
    return None


class ExistingTerms(Generic[T]):
    """Terms of owners in place, by value, each with its owners counted per domain."""

    def __init__(self, nodes: Mapping[str, NodeInfo]) -> None:
        self._nodes = nodes
        self._counts: dict[T, Counter[str]] = {}
        """Term -> domain value -> owners there (a term no owner holds any more stays, empty)."""
        self._anchored: dict[Anchor, list[T]] = {}
        self._unanchored: list[T] = []
        self._owners: dict[Hashable, tuple[str, list[tuple[T, str]]]] = {}
        """Owner -> its uid, and each of its terms with the domain it counts in."""
        self._by_uid: dict[str, list[Hashable]] = {}
        self.operations = 0
        """Terms asked whether they select a pod, so far (the tests' measure of work)."""

    def __bool__(self) -> bool:
        """Whether any owner holds a term."""
        return bool(self._owners)

    def add(self, owner: Hashable, uid: str, node_name: str, terms: Iterable[T]) -> None:
        """Count ``owner``'s ``terms`` in its node's domains (a term whose key its node lacks,
        and a term that selects nothing, count nowhere)."""
        node = self._nodes.get(node_name)
        if node is None:
            return
        counted: list[tuple[T, str]] = []
        for term in terms:
            value = node.labels.get(term.topology_key)
            if value is None or term.selector is None:
                continue
            counts = self._counts.get(term)
            if counts is None:
                counts = self._counts[term] = Counter()
                self._file(term, term.selector)
            counts[value] += 1
            counted.append((term, value))
        if counted:
            self._owners[owner] = (uid, counted)
            self._by_uid.setdefault(uid, []).append(owner)

    def remove(self, owner: Hashable) -> None:
        found = self._owners.pop(owner, None)
        if found is None:
            return
        uid, counted = found
        for term, value in counted:
            counts = self._counts[term]
            counts[value] -= 1
            if not counts[value]:
                del counts[value]
        owners = self._by_uid[uid]
        owners.remove(owner)
        if not owners:
            del self._by_uid[uid]

    def selecting(
        self,
        labels: Mapping[str, str],
        selects: Callable[[T], bool],
        *,
        excluding_uid: str = "",
    ) -> Iterator[tuple[T, Counter[str]]]:
        """Each term some owner holds that ``selects`` (asked only of the terms whose anchor
        ``labels`` carry, and of the unanchored ones), with its owners per domain, leaving
        out the owners with ``excluding_uid``."""
        left_out: Counter[tuple[T, str]] = Counter(
            counted
            for owner in self._by_uid.get(excluding_uid, ())
            for counted in self._owners[owner][1]
        )
        for term in self._candidates(labels):
            counts = self._counts[term]
            if not counts:
                continue
            self.operations += 1
            if not selects(term):
                continue
            if left_out:
                counts = Counter(
                    {
                        value: count - left_out[term, value]
                        for value, count in counts.items()
                        if count > left_out[term, value]
                    }
                )
            if counts:
                yield term, counts

    def _candidates(self, labels: Mapping[str, str]) -> Iterator[T]:
        for key, value in labels.items():
            yield from self._anchored.get((key, value), ())
            yield from self._anchored.get((key, None), ())
        yield from self._unanchored

    def _file(self, term: T, selector: Selector) -> None:
        found = anchors(selector)
        if found is None:
            self._unanchored.append(term)
            return
        for anchor in found:
            self._anchored.setdefault(anchor, []).append(term)
