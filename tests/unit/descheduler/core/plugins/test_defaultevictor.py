"""DefaultEvictor: every upstream filter and preEvictionFilter rule, one row each."""

from __future__ import annotations

from typing import Any

import pytest

from agent.config.schema import load
from agent.descheduler.core.cycle import CycleHandle
from agent.descheduler.core.errors import DeschedulerError
from agent.descheduler.core.plugins.defaultevictor import DefaultEvictor, DefaultEvictorArgs
from agent.descheduler.model.cluster import NodeUsage
from agent.descheduler.plan.shape import Plan
from tests.harness.deschedulerstate import node, pdb, pod, snapshot
from tests.harness.kubeobjects import owner_ref

N1 = node("n1")
N2 = node("n2")


def _evictor(args: dict[str, Any], *items: dict[str, Any], **kwargs: Any) -> DefaultEvictor:
    parsed, errors = load(DefaultEvictorArgs, args)
    assert not errors
    state = snapshot(*items, **kwargs)
    handle = CycleHandle(state, sorted(state.nodes.values(), key=lambda n: n.name), Plan(), "p")
    return DefaultEvictor(parsed, handle)


def _target(**kwargs: Any) -> dict[str, Any]:
    return pod("target", "n1", **kwargs)


def _admits_filter(args: dict[str, Any], target: dict[str, Any], *others: dict[str, Any]) -> bool:
    evictor = _evictor(args, N1, N2, target, *others)
    (projected,) = [p for p in evictor.handle.snapshot.pods_on("n1") if p.name == "target"]
    return evictor.filter(projected)


EMPTY_DIR = {"name": "scratch", "emptyDir": {}}
CLAIM = {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
FAST_CLAIM = {
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "data", "namespace": "default"},
    "spec": {"storageClassName": "fast"},
}
PVC_PROTECTION = {"podProtections": {"extraEnabled": ["PodsWithPVC"]}}


@pytest.mark.parametrize(
    ("args", "target", "others", "admitted"),
    [
        pytest.param({}, _target(), (), True, id="plain-replicaset-pod"),
        pytest.param(
            {},
            _target(volumes=[EMPTY_DIR], annotations={"descheduler.alpha.kubernetes.io/evict": ""}),
            (),
            True,
            id="evict-annotation-overrides-protection",
        ),
        pytest.param(
            {"noEvictionPolicy": "Mandatory"},
            _target(annotations={"descheduler.alpha.kubernetes.io/prefer-no-eviction": ""}),
            (),
            False,
            id="mandatory-no-eviction",
        ),
        pytest.param(
            {"noEvictionPolicy": "Preferred"},
            _target(annotations={"descheduler.alpha.kubernetes.io/prefer-no-eviction": ""}),
            (),
            True,
            id="preferred-no-eviction-only-orders",
        ),
        pytest.param(
            {"evictLocalStoragePods": True},
            _target(annotations={"kubernetes.io/config.mirror": "x"}),
            (),
            False,
            id="mirror-pod",
        ),
        pytest.param(
            {}, _target(annotations={"kubernetes.io/config.source": "file"}), (), False, id="static"
        ),
        pytest.param({}, _target(deleting=True), (), False, id="terminating"),
        pytest.param({}, _target(volumes=[EMPTY_DIR]), (), False, id="local-storage-protected"),
        pytest.param(
            {"evictLocalStoragePods": True},
            _target(volumes=[EMPTY_DIR]),
            (),
            True,
            id="local-storage-legacy-off",
        ),
        pytest.param(
            {"podProtections": {"defaultDisabled": ["PodsWithLocalStorage"]}},
            _target(volumes=[{"name": "h", "hostPath": {"path": "/x"}}]),
            (),
            True,
            id="local-storage-podProtections-off",
        ),
        pytest.param({}, _target(priority=2_000_000_000), (), False, id="system-critical"),
        pytest.param(
            {"evictSystemCriticalPods": True},
            _target(priority=2_000_001_000),
            (),
            True,
            id="system-critical-legacy-off",
        ),
        pytest.param(
            {"priorityThreshold": {"value": 1000}},
            _target(priority=1000),
            (),
            False,
            id="at-threshold",
        ),
        pytest.param(
            {"priorityThreshold": {"value": 1000}},
            _target(priority=999),
            (),
            True,
            id="below-threshold",
        ),
        pytest.param(
            {"priorityThreshold": {"value": 1000}},
            _target(priority=None),
            (),
            True,
            id="nil-priority",
        ),
        pytest.param(
            {"priorityThreshold": {"name": "high"}},
            _target(priority=500),
            ({"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 500},),
            False,
            id="threshold-by-priority-class-name",
        ),
        pytest.param(
            {"evictSystemCriticalPods": True, "priorityThreshold": {"value": 10}},
            _target(priority=500),
            (),
            True,
            id="system-critical-off-disables-threshold",
        ),
        pytest.param({}, _target(owner=None), (), False, id="bare-pod"),
        pytest.param(
            {}, _target(owner=None, phase="Failed"), (), False, id="failed-bare-protected"
        ),
        pytest.param(
            {"evictFailedBarePods": True},
            _target(owner=None, phase="Failed"),
            (),
            True,
            id="failed-bare-legacy-off",
        ),
        pytest.param(
            {"evictFailedBarePods": True}, _target(owner=None), (), False, id="running-bare-never"
        ),
        pytest.param(
            {}, _target(owner=owner_ref("DaemonSet", "ds")), (), False, id="daemonset-protected"
        ),
        pytest.param(
            {"evictDaemonSetPods": True},
            _target(owner=owner_ref("DaemonSet", "ds")),
            (),
            True,
            id="ds-off",
        ),
        pytest.param({}, _target(volumes=[CLAIM]), (), True, id="pvc-evictable-by-default"),
        pytest.param({"ignorePvcPods": True}, _target(volumes=[CLAIM]), (), False, id="pvc-legacy"),
        pytest.param(
            {
                "podProtections": {
                    "extraEnabled": ["PodsWithPVC"],
                    "config": {"PodsWithPVC": {"protectedStorageClasses": [{"name": "fast"}]}},
                }
            },
            _target(volumes=[CLAIM]),
            (FAST_CLAIM,),
            False,
            id="pvc-protected-storage-class",
        ),
        pytest.param(
            {
                "podProtections": {
                    "extraEnabled": ["PodsWithPVC"],
                    "config": {"PodsWithPVC": {"protectedStorageClasses": [{"name": "slow"}]}},
                }
            },
            _target(volumes=[CLAIM]),
            (FAST_CLAIM,),
            True,
            id="pvc-other-storage-class",
        ),
        pytest.param(PVC_PROTECTION, _target(volumes=[CLAIM]), (), False, id="pvc-podProtections"),
        pytest.param({"ignorePodsWithoutPDB": True}, _target(), (), False, id="without-pdb"),
        pytest.param(
            {"podProtections": {"extraEnabled": ["PodsWithoutPDB"]}},
            _target(labels={"app": "a"}),
            (pdb("budget", match_labels={"app": "a"}),),
            True,
            id="with-pdb",
        ),
        pytest.param(
            {"podProtections": {"extraEnabled": ["PodsWithResourceClaims"]}},
            _target(spec={"resourceClaims": [{"name": "gpu"}]}),
            (),
            False,
            id="resource-claims",
        ),
        pytest.param(
            {"labelSelector": {"matchLabels": {"tier": "web"}}},
            _target(labels={"tier": "db"}),
            (),
            False,
            id="label-selector-mismatch",
        ),
        pytest.param(
            {
                "labelSelector": {
                    "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]
                }
            },
            _target(labels={"tier": "web"}),
            (),
            True,
            id="label-selector-match",
        ),
        pytest.param(
            {"minReplicas": 3}, _target(), (pod("sibling", "n2"),), False, id="too-few-replicas"
        ),
        pytest.param(
            {"minReplicas": 2}, _target(), (pod("sibling", "n2"),), True, id="enough-replicas"
        ),
        pytest.param({"minReplicas": 1}, _target(), (), True, id="min-replicas-one-is-ignored"),
        pytest.param(
            {"minPodAge": "1h"}, _target(start_time="2027-01-15T07:50:00Z"), (), False, id="young"
        ),
        pytest.param({"minPodAge": "1h"}, _target(start_time=None), (), False, id="no-start-time"),
        pytest.param({"minPodAge": "1h"}, _target(), (), True, id="old-enough"),
    ],
)
def test_filter(
    args: dict[str, Any], target: dict[str, Any], others: tuple[dict[str, Any], ...], admitted: bool
) -> None:
    """Each of upstream's filter rules admits or rejects the pod as upstream does."""
    assert _admits_filter(args, target, *others) is admitted


def test_unknown_priority_class_fails_the_build() -> None:
    """A threshold naming a missing PriorityClass fails like upstream's lookup error."""
    with pytest.raises(DeschedulerError, match="priority class 'gone' not found"):
        _evictor({"priorityThreshold": {"name": "gone"}}, N1)


def test_filter_reports_every_reason() -> None:
    """A pod failing several checks gets all the reasons, as upstream aggregates them."""
    evictor = _evictor({}, N1, _target(owner=None, volumes=[EMPTY_DIR], deleting=True))
    (target,) = evictor.handle.snapshot.pods_on("n1")
    assert evictor.filter_reasons(target) == [
        "pod is terminating",
        "pod does not have any ownerRefs",
        "pod has local storage",
    ]


BIG = {"cpu": "3900m"}
ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "db"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}
REQUIRED_ZONE_A = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
            ]
        }
    }
}


@pytest.mark.parametrize(
    ("target", "second", "others", "fits"),
    [
        pytest.param(_target(), N2, (), True, id="room-elsewhere"),
        pytest.param(_target(), None, (), False, id="no-other-node"),
        pytest.param(_target(), node("n2", ready=False), (), False, id="other-node-not-ready"),
        pytest.param(_target(), node("n2", unschedulable=True), (), False, id="unschedulable"),
        pytest.param(_target(node_selector={"disk": "ssd"}), N2, (), False, id="node-selector"),
        pytest.param(
            _target(node_selector={"disk": "ssd"}),
            node("n2", labels={"disk": "ssd"}),
            (),
            True,
            id="node-selector-match",
        ),
        pytest.param(_target(affinity=REQUIRED_ZONE_A), N2, (), False, id="required-affinity"),
        pytest.param(
            _target(),
            node("n2", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
            (),
            False,
            id="no-schedule-taint",
        ),
        pytest.param(
            _target(),
            node("n2", taints=[{"key": "k", "effect": "NoExecute"}]),
            (),
            False,
            id="no-execute-taint",
        ),
        pytest.param(
            _target(),
            node("n2", taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
            (),
            True,
            id="prefer-no-schedule-ignored",
        ),
        pytest.param(
            _target(tolerations=[{"key": "k", "operator": "Exists"}]),
            node("n2", taints=[{"key": "k", "effect": "NoSchedule"}]),
            (),
            True,
            id="tolerated-taint",
        ),
        pytest.param(
            _target(affinity=ANTI, labels={"app": "web"}),
            node("n2", labels={"kubernetes.io/hostname": "n2"}),
            (pod("db", "n2", labels={"app": "db"}),),
            False,
            id="anti-affinity",
        ),
        pytest.param(
            _target(cpu="200m"), N2, (pod("big", "n2", cpu="3900m"),), False, id="insufficient-cpu"
        ),
        pytest.param(
            _target(cpu="200m"),
            N2,
            (pod("big", "n2", cpu="3900m", phase="Succeeded"),),
            True,
            id="finished-pods-free-their-requests",
        ),
        pytest.param(_target(), node("n2", pods="1"), (pod("o", "n2"),), False, id="no-pod-slot"),
    ],
)
def test_node_fit(
    target: dict[str, Any],
    second: dict[str, Any] | None,
    others: tuple[dict[str, Any], ...],
    fits: bool,
) -> None:
    """``nodeFit`` wants another Ready, schedulable, matching, tolerated node with room."""
    items = [N1, target, *others] + ([second] if second else [])
    evictor = _evictor({"nodeFit": True}, *items)
    (projected,) = [p for p in evictor.handle.snapshot.pods_on("n1") if p.name == "target"]
    assert evictor.pre_eviction_filter(projected) is fits


def test_node_fit_skips_a_node_whose_agent_reports_shutdown() -> None:
    """A node whose agent says it is shutting down is never a place to go."""
    usage = NodeUsage(
        "n2", {}, {}, stale=False, shutting_down=True, gated=False, agent_stopped=False
    )
    evictor = _evictor({"nodeFit": True}, N1, N2, _target(), node_usage={"n2": usage})
    (target,) = evictor.handle.snapshot.pods_on("n1")
    assert evictor.pre_eviction_filter(target) is False


@pytest.mark.parametrize(
    ("labels", "admitted"),
    [
        pytest.param({"team": "a"}, True, id="namespace-matches"),
        pytest.param({"team": "b"}, False, id="namespace-does-not-match"),
    ],
)
def test_namespace_label_selector(labels: dict[str, str], admitted: bool) -> None:
    """``namespaceLabelSelector`` admits only pods of namespaces whose labels match."""
    namespace = {"kind": "Namespace", "metadata": {"name": "default", "labels": labels}}
    evictor = _evictor(
        {"namespaceLabelSelector": {"matchLabels": {"team": "a"}}}, N1, namespace, _target()
    )
    (target,) = evictor.handle.snapshot.pods_on("n1")
    assert evictor.pre_eviction_filter(target) is admitted
