"""The incremental swap audit: after pod events only the changed pods are judged again, and
the report (rows, unmapped cgroups, so every gauge) is the one a full audit would give."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agent.kubesemantics.pods import MIRROR_ANNOTATION
from agent.node.containercgroups import CgroupReading, KubepodsScan, SwapMax
from agent.node.kubepods import PodQOSDir
from agent.swap.audit import AuditReport, NodeSummary, build_report
from agent.swap.incremental import affected_uids, update_report
from agent.swap.wakeups import AuditInputs
from tests.harness.cgroups import GIB, ContainerFixture, container_id, pod_object
from tests.unit.swap.node_summary import V2_LIMITED_SWAP_NODE

SUMMARY = V2_LIMITED_SWAP_NODE
SLOTS = 4
MANIFEST_UID = "00000000-0000-4000-8000-0000000000ff"
"""A static pod's manifest UID: its cgroups carry it; no API pod has it as its own UID."""
SWAP_VALUES: list[SwapMax] = ["max", 0, 268435456, 4096, None]


def uid(slot: int) -> str:
    return f"00000000-0000-4000-8000-{slot:012d}"


def reading(pod_uid: str, cid: str, swap_max: SwapMax) -> CgroupReading:
    return CgroupReading(
        path=f"kubepods.slice/kubepods-burstable.slice/pod{pod_uid}/cri-containerd-{cid}.scope",
        qos=PodQOSDir.BURSTABLE,
        pod_uid=pod_uid,
        container_id=cid,
        runtime="cri-containerd",
        swap_max=swap_max,
        swap_current=0,
    )


@dataclass
class PodModel:
    """One pod slot: what its API object and its cgroups look like now."""

    name: str
    generation: int = 0
    running: bool = True
    memory: str = "1Gi"
    phase: str = "Running"
    mirror: bool = False
    noise: int = 0
    swap_max: SwapMax = "max"

    @property
    def cid(self) -> str:
        return container_id(1000 + self.generation)


@dataclass
class World:
    """A node: its pods (as the API shows them) and its kubepods tree (as a scan reads it)."""

    pods: dict[int, PodModel] = field(default_factory=dict)
    objects: dict[int, dict[str, Any]] = field(default_factory=dict)
    readings: dict[tuple[str, str], CgroupReading] = field(default_factory=dict)

    def render(self, slot: int) -> dict[str, Any]:
        model = self.pods[slot]
        fixture = ContainerFixture(
            "app", model.cid if model.running else None, {"memory": model.memory}, {}
        )
        annotations = {MIRROR_ANNOTATION: MANIFEST_UID} if model.mirror else None
        pod = pod_object(model.name, uid(slot), fixture, annotations=annotations)
        pod["status"]["phase"] = model.phase
        pod["status"]["conditions"] = [{"type": "Ready", "status": str(model.noise % 2 == 0)}]
        self.objects[slot] = pod
        return pod

    def cgroup_uid(self, slot: int) -> str:
        return MANIFEST_UID if self.pods[slot].mirror else uid(slot)

    def add_cgroup(self, slot: int, *, before_status: bool = False) -> None:
        """The container's cgroup; ``before_status``: the runtime made it before the pod's
        status names the container (unmapped until then)."""
        model = self.pods[slot]
        if model.running or before_status:
            key = (self.cgroup_uid(slot), model.cid)
            self.readings[key] = reading(*key, model.swap_max)

    def drop_cgroup(self, slot: int) -> None:
        self.readings.pop((self.cgroup_uid(slot), self.pods[slot].cid), None)

    def pod_list(self) -> list[dict[str, Any]]:
        return [self.objects[slot] for slot in sorted(self.objects)]

    def scan(self, only: frozenset[str] | None = None) -> KubepodsScan:
        readings = tuple(
            each for each in self.readings.values() if only is None or each.pod_uid in only
        )
        return KubepodsScan(None, "kubepods.slice", readings)


EVENTS = st.tuples(
    st.sampled_from(
        ["create", "restart", "resize", "noise", "finish", "delete", "audit", "relist"]
    ),
    st.integers(0, SLOTS - 1),
    st.integers(0, 7),
)


def apply(world: World, inputs: AuditInputs, event: tuple[str, int, int]) -> None:
    """Change the world as a kubelet would, and tell ``inputs`` what the watch would show."""
    what, slot, variant = event
    model = world.pods.get(slot)
    if what == "create" and model is None:
        world.pods[slot] = PodModel(
            name=f"p{variant % 2}",  # names repeat: a pod re-created under an old name
            running=variant % 4 != 0,
            mirror=variant == 7,
            swap_max=SWAP_VALUES[variant % len(SWAP_VALUES)],
        )
        world.add_cgroup(slot, before_status=variant % 8 == 4)
        inputs.changed("ADDED", world.render(slot))
    elif what == "delete" and model is not None:
        if variant % 2:  # else the cgroup outlives the pod for a while: unmapped
            world.drop_cgroup(slot)
        del world.pods[slot]
        inputs.changed("DELETED", world.objects.pop(slot))
    elif what == "relist":
        inputs.changed("SYNCED", None)
    elif model is not None and what != "audit":
        if what == "restart" and not model.running:  # started: the status names it now
            model.running = True
            world.add_cgroup(slot)
        elif what == "restart":
            world.drop_cgroup(slot)
            model.generation += 1
            model.swap_max = SWAP_VALUES[variant % len(SWAP_VALUES)]
            world.add_cgroup(slot)
        elif what == "resize":
            model.memory = f"{1 + variant % 3}Gi"
        elif what == "finish":
            model.phase = "Succeeded"
        else:
            model.noise += 1
        inputs.changed("MODIFIED", world.render(slot))


def incremental_audit(world: World, inputs: AuditInputs, previous: AuditReport) -> AuditReport:
    """What the controller does on an event-woken cycle (a relist falls back to a full one)."""
    pods = world.pod_list()
    changed = inputs.remember(pods)
    if changed is None:
        return build_report(SUMMARY, pods, world.scan(), inputs.views(pods))
    affected = affected_uids(pods, changed)
    views = inputs.views(pods)  # the views the controller keeps, not rebuilt
    report = update_report(previous, SUMMARY, pods, world.scan(affected), affected, views=views)
    assert report is not None
    return report


@settings(max_examples=300, deadline=None)
@given(st.lists(EVENTS, max_size=40))
@example(  # two pods of one name: the rows keep a fixed order whichever is judged again
    [("create", 0, 0), ("create", 1, 2), ("audit", 0, 0), ("resize", 0, 1)]
)
@example(  # a cgroup made before the status names its container is claimed once it does
    [("create", 0, 4), ("audit", 0, 0), ("restart", 0, 0)]
)
def test_incremental_audits_give_what_a_full_audit_gives(
    events: list[tuple[str, int, int]],
) -> None:
    """After any sequence of pod events (audits in between), the incremental report equals a
    full audit's: same rows in the same order, same unmapped cgroups, same drift count."""
    world, inputs = World(), AuditInputs()
    report = build_report(SUMMARY, [], world.scan())
    inputs.remember([])
    for event in [*events, ("audit", 0, 0)]:
        apply(world, inputs, event)
        if event[0] == "audit":
            report = incremental_audit(world, inputs, report)
            full = build_report(SUMMARY, world.pod_list(), world.scan())
            assert report == full
            assert len(report.drifted) == len(full.drifted)


def _two_pod_world() -> tuple[World, AuditInputs, AuditReport]:
    world, inputs = World(), AuditInputs()
    for slot in (0, 1):
        apply(world, inputs, ("create", slot, 1))
    inputs.remember(world.pod_list())
    return world, inputs, build_report(SUMMARY, world.pod_list(), world.scan())


def test_a_changed_pod_is_judged_alone() -> None:
    """A restart of one pod makes the next audit read that pod's cgroups and no other's."""
    world, inputs, report = _two_pod_world()
    apply(world, inputs, ("restart", 1, 2))
    changed = inputs.remember(world.pod_list())
    assert changed == {uid(1)}
    assert affected_uids(world.pod_list(), changed) == {uid(1)}
    updated = update_report(report, SUMMARY, world.pod_list(), world.scan(changed), changed)
    assert updated is not None
    assert [(row.pod_uid, row.actual) for row in updated.containers] == [
        (uid(0), 0),
        (uid(1), 268435456),
    ]
    assert updated.containers[0] is report.containers[0]  # kept, not judged again


def test_a_deleted_pods_rows_go_and_its_leftover_cgroup_is_unmapped() -> None:
    """A deleted pod's containers leave the report (so their series leave /metrics); a
    cgroup it left behind shows as unmapped, as a full audit would show it."""
    world, inputs, report = _two_pod_world()
    apply(world, inputs, ("delete", 0, 0))
    changed = inputs.remember(world.pod_list())
    assert changed == {uid(0)}
    updated = update_report(report, SUMMARY, world.pod_list(), world.scan(changed), changed)
    assert updated is not None
    assert [row.pod_uid for row in updated.containers] == [uid(1)]
    assert [each.pod_uid for each in updated.unmapped] == [uid(0)]


def test_status_noise_changes_nothing_to_read() -> None:
    """A Ready flip leaves no pod for the next audit to read again."""
    world, inputs, _ = _two_pod_world()
    apply(world, inputs, ("noise", 0, 0))
    assert inputs.remember(world.pod_list()) == frozenset()


def test_a_static_pods_manifest_uid_brings_its_mirror_along() -> None:
    """Pods sharing a cgroup UID (a mirror pod and its manifest's) are judged together."""
    pods = [
        pod_object("a", uid(0), annotations={MIRROR_ANNOTATION: MANIFEST_UID}),
        pod_object("b", uid(1), annotations={MIRROR_ANNOTATION: MANIFEST_UID}),
        pod_object("c", uid(2)),
    ]
    assert affected_uids(pods, {uid(0)}) == {uid(0), uid(1), MANIFEST_UID}


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param(
            replace(SUMMARY, node=replace(SUMMARY.node, swap_capacity_bytes=GIB)), id="capacity"
        ),
        pytest.param(replace(SUMMARY, page_size=65536), id="page-size"),
        pytest.param(replace(SUMMARY, kubepods_problem="no kubepods cgroup"), id="tree-gone"),
    ],
)
def test_a_new_swap_basis_needs_a_full_audit(changed: NodeSummary) -> None:
    """When what expected limits are computed from changed, no row of the last report
    stands: the incremental pass declines and the controller audits in full."""
    world, _, report = _two_pod_world()
    assert update_report(report, changed, world.pod_list(), world.scan(), frozenset()) is None
