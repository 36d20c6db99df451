"""The incremental swap audit: after pod events, re-read and re-judge only the pods that
changed, and keep the rest of the last report.

A full audit walks every container cgroup on the node and recomputes every container's
limit; on a node of 110 pods with pods starting and stopping every few seconds, doing that
on each event was most of the agent's CPU (``scripts/benchmarks/footprint.py``). A row of
the report depends only on its pod, the readings under that pod's cgroup UIDs (its own and
a static pod's manifest UID) and the node's swap basis (``SwapNode`` and the page size); an
unmapped cgroup depends only on the pods claiming its UID. So for a set of changed UIDs,
closed over pods sharing one (``affected_uids``), replacing the rows and unmapped cgroups of
those UIDs gives the report a full audit would give, as long as nothing else in the tree
changed. That last part is the periodic full audit's job (``memorySwap.auditInterval``): it
also catches edits to cgroup files that no API event shows.

Pure: pods (API dicts), the last report and a scan of the affected pods go in; a report,
or ``None`` when only a full audit will do (the swap basis or the tree's layout changed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agent.node.containercgroups import KubepodsScan
from agent.swap.audit import (
    AuditReport,
    NodeSummary,
    audit_containers,
    row_order,
    unmapped_order,
)
from agent.swap.pods import PodView, cgroup_uids


def affected_uids(pods: Iterable[Mapping[str, Any]], changed: Iterable[str]) -> frozenset[str]:
    """``changed`` plus every cgroup UID of a pod that shares one with it (a static pod's
    mirror and manifest UIDs go together), until nothing more joins."""
    affected = set(changed)
    groups = [uids for uids in map(cgroup_uids, pods) if len(uids) > 1]
    grew = True
    while grew:
        grew = False
        for uids in groups:
            if uids & affected and not uids <= affected:
                affected |= uids
                grew = True
    return frozenset(affected)


def _same_basis(before: NodeSummary, now: NodeSummary) -> bool:
    """Whether rows judged under ``before`` still stand under ``now``."""
    return (
        before.node == now.node
        and before.page_size == now.page_size
        and before.driver == now.driver
        and before.kubepods_root == now.kubepods_root
        and now.kubepods_problem is None
    )


def update_report(
    previous: AuditReport,
    summary: NodeSummary,
    pods: Iterable[Mapping[str, Any]],
    scan: KubepodsScan,
    affected: frozenset[str],
    *,
    views: Sequence[PodView] | None = None,
) -> AuditReport | None:
    """``previous`` with the rows and unmapped cgroups of ``affected`` UIDs judged again
    from ``pods`` and ``scan`` (a scan of those UIDs' pod cgroups); ``None`` when the swap
    basis changed since ``previous`` and every row needs judging again.

    ``affected`` must be closed (``affected_uids``) over ``pods``; ``views``, when given,
    are their ``pod_view`` in order. Pods without a UID have
    no cgroup to match and are cheap: they are always judged again.
    """
    if not _same_basis(previous.summary, summary):
        return None
    listed = list(pods)
    redo = [
        index
        for index, pod in enumerate(listed)
        if not (uids := cgroup_uids(pod)) or uids & affected
    ]
    readings = [each for each in scan.containers if each.pod_uid in affected]
    rows, unmapped = audit_containers(
        [listed[index] for index in redo],
        readings,
        summary,
        None if views is None else [views[index] for index in redo],
    )
    kept = [row for row in previous.containers if row.pod_uid and row.pod_uid not in affected]
    kept_unmapped = [each for each in previous.unmapped if each.pod_uid not in affected]
    return AuditReport(
        summary=summary,
        containers=tuple(sorted([*kept, *rows], key=row_order)),
        unmapped=tuple(sorted([*kept_unmapped, *unmapped], key=unmapped_order)),
    )
