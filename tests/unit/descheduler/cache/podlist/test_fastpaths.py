"""The cold-start fast paths (integer quantities, memoized pod lists) equal the exact ones."""

import copy
import gzip
import json
from fractions import Fraction
from typing import Any

import pytest

from agent.descheduler.cache import projection
from agent.descheduler.cache.podlist.projector import PodListProjector
from agent.descheduler.cache.state import PROJECTIONS, ClusterState, Projections, projections
from agent.descheduler.cache.wire import codec_for
from agent.descheduler.policyfile import load_policy
from agent.kube.reflector import Unprojected
from agent.kubesemantics.pods import MIRROR_ANNOTATION, SOURCE_ANNOTATION
from agent.kubesemantics.quantities import parse_quantity
from tests.harness.repository import CLUSTER_1K
from tests.unit.descheduler.cache.test_wire import PENDING_ADDON, RICH_POD


def _exact(value: Any, *, millis: bool) -> int | None:
    try:
        exact = parse_quantity(value) * (1000 if millis else 1)
    except (ValueError, TypeError):
        return None
    return -((-exact.numerator) // exact.denominator)


QUANTITIES = [
    pytest.param("0", True, id="zero"),
    pytest.param("1", True, id="one"),
    pytest.param("007", True, id="leading-zeros"),
    pytest.param("100m", True, id="millis"),
    pytest.param("1m", True, id="one-milli"),
    pytest.param("1500m", True, id="millis-over-one"),
    pytest.param("1Ki", True, id="Ki"),
    pytest.param("512Mi", True, id="Mi"),
    pytest.param("2Gi", True, id="Gi"),
    pytest.param("3Ti", True, id="Ti"),
    pytest.param("1Pi", True, id="Pi"),
    pytest.param("8Ei", True, id="Ei"),
    pytest.param("1k", True, id="k"),
    pytest.param("5M", True, id="M"),
    pytest.param("1G", True, id="G"),
    pytest.param("2T", True, id="T"),
    pytest.param("3P", True, id="P"),
    pytest.param("4E", True, id="E"),
    pytest.param("123456789012345678901234567890Ei", True, id="huge"),
    pytest.param(250, True, id="json-integer"),
    pytest.param("1.5Gi", False, id="decimal-binary"),
    pytest.param("0.1", False, id="decimal"),
    pytest.param(".5", False, id="leading-dot"),
    pytest.param("1e3", False, id="exponent"),
    pytest.param("1E3", False, id="exponent-upper"),
    pytest.param("+1", False, id="plus-sign"),
    pytest.param("-1", False, id="negative"),
    pytest.param("-100m", False, id="negative-millis"),
    pytest.param(" 1Gi", False, id="leading-space"),
    pytest.param("100n", False, id="nano"),
    pytest.param("100u", False, id="micro"),
    pytest.param("1K", False, id="upper-K-invalid"),
    pytest.param("1ki", False, id="lower-ki-invalid"),
    pytest.param("1e3Ki", False, id="exponent-and-suffix-invalid"),
    pytest.param("", False, id="empty"),
    pytest.param("m", False, id="suffix-only"),
    pytest.param("Gi", False, id="binary-suffix-only"),
    pytest.param("١٢", False, id="non-ascii-digits"),
    pytest.param("1_000", False, id="underscore"),
    pytest.param(1.5, False, id="json-float"),
    pytest.param(True, False, id="bool"),
]


@pytest.mark.parametrize(("value", "fast"), QUANTITIES)
@pytest.mark.parametrize(
    "millis", [pytest.param(True, id="millis"), pytest.param(False, id="whole")]
)
def test_fast_quantities_equal_the_exact_parse(value: Any, fast: bool, millis: bool) -> None:
    """The integer parser answers the common forms exactly and leaves every other to Fraction;
    what neither would store is refused on both paths."""
    answer = projection.fast_amount(value, millis=millis)
    assert (answer is not None) is fast
    if answer is not None:
        assert answer == _exact(value, millis=millis)
    cpu_or_memory = "cpu" if millis else "memory"
    exact = _exact(value, millis=millis)
    if exact is None or not 0 <= exact <= projection.MAX_AMOUNT:
        # What the API server would not store (or no int64 holds) is refused, with its path.
        with pytest.raises(projection.ProjectionError, match=f"^requests.{cpu_or_memory}: "):
            projection.resource_list({cpu_or_memory: value}, "requests")
    else:
        assert projection.resource_list({cpu_or_memory: value})[cpu_or_memory] == exact


def test_fast_quantities_round_milli_units_up() -> None:
    """A milli-quantity of a whole-unit resource rounds up, as ``Quantity.Value()`` does."""
    assert projection.resource_list({"memory": "1001m", "pods": "1000m"}) == {
        "memory": 2,
        "pods": 1,
    }
    assert Fraction(1001, 1000) == parse_quantity("1001m")


def _with(pod: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(pod)
    target = changed
    for step in path[:-1]:
        target = target.setdefault(step, {})
    target[path[-1]] = value
    return changed


SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "shop"}},
        "matchLabelKeys": ["pod-template-hash"],
    }
]

ODD_PODS = [
    pytest.param(RICH_POD, id="rich"),
    pytest.param(_with(RICH_POD, ["status", "qosClass"], None), id="qos-computed"),
    pytest.param(_with(RICH_POD, ["status", "qosClass"], "Nonsense"), id="qos-invalid"),
    pytest.param(_with(RICH_POD, ["status", "qosClass"], "BestEffort"), id="qos-stored-wins"),
    pytest.param(
        _with(
            _with(RICH_POD, ["status"], {}),
            ["spec", "resources"],
            {"requests": {"cpu": "1"}, "limits": {"cpu": "1", "memory": "1Gi"}},
        ),
        id="pod-level-resources",
    ),
    pytest.param(
        _with(
            RICH_POD,
            ["spec", "containers"],
            [{"name": "a", "resources": {"limits": {"cpu": "1.5", "memory": "1e3"}}}],
        ),
        id="limits-only-odd-forms",
    ),
    pytest.param(
        _with(RICH_POD, ["spec", "containers"], [{"name": "a", "resources": None}]),
        id="null-resources",
    ),
    pytest.param(_with(RICH_POD, ["spec", "volumes"], [{"name": "h", "hostPath": {}}]), id="host"),
    pytest.param(
        _with(RICH_POD, ["metadata", "creationTimestamp"], "2026-11-22T01:02:03.123456789+02:00"),
        id="nano-time",
    ),
    pytest.param(_with(RICH_POD, ["spec", "topologySpreadConstraints"], SPREAD), id="spread"),
    pytest.param(
        _with(
            _with(RICH_POD, ["spec", "topologySpreadConstraints"], SPREAD),
            ["spec", "resourceClaims"],
            [{"name": "gpu"}],
        ),
        id="spread-and-claims",
    ),
    pytest.param(_with(RICH_POD, ["spec", "topologySpreadConstraints"], []), id="spread-empty"),
    pytest.param({"metadata": {"name": "bare"}}, id="bare"),
    pytest.param(PENDING_ADDON, id="pending-unschedulable"),
    pytest.param(_with(PENDING_ADDON, ["spec", "nodeName"], "n1"), id="bound-unschedulable"),
    pytest.param({}, id="empty"),
    pytest.param(
        _with(RICH_POD, ["metadata", "annotations"], {MIRROR_ANNOTATION: "x"}), id="mirror"
    ),
    pytest.param(
        _with(RICH_POD, ["metadata", "annotations"], {SOURCE_ANNOTATION: "file"}), id="static"
    ),
    pytest.param(
        _with(
            RICH_POD,
            ["status", "conditions"],
            [{"type": "Ready", "status": "False"}, {"type": "Ready", "status": "True"}],
        ),
        id="first-ready-condition-counts",
    ),
    pytest.param(
        _with(
            RICH_POD,
            ["status", "containerStatuses"],
            [{"restartCount": 7, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
        ),
        id="crash-looping",
    ),
    pytest.param(
        _with(
            RICH_POD,
            ["status", "initContainerStatuses"],
            [{"state": {"terminated": {"reason": "Error", "exitCode": 3}}}],
        ),
        id="init-terminated",
    ),
    pytest.param(_with(RICH_POD, ["spec", "tolerations"], []), id="only-tolerations-differ"),
    pytest.param(_with(RICH_POD, ["spec", "nodeSelector"], {"disk": "hdd"}), id="only-selector"),
    pytest.param(_with(RICH_POD, ["spec", "affinity"], None), id="only-affinity-differs"),
    pytest.param(_with(RICH_POD, ["metadata", "ownerReferences"], []), id="only-owners-differ"),
]


@pytest.mark.parametrize(
    "with_status", [pytest.param(True, id="full"), pytest.param(False, id="no-pod-status")]
)
@pytest.mark.parametrize(
    "compact", [pytest.param(True, id="compact"), pytest.param(False, id="spaced")]
)
@pytest.mark.parametrize("pod", ODD_PODS)
def test_odd_pods_project_as_the_exact_path(
    pod: dict[str, Any], compact: bool, with_status: bool
) -> None:
    """A pod with unusual resources, times or volumes projects as ``project_pod`` does,
    with the pod-state details or without them.

    The rich pod goes first, so a memo keyed on too little, or a comparison with the
    previous pod that leaves a part out, would hand its results to a pod that differs only
    in that part. Compact pages are cut by byte search, spaced ones parsed: both are checked.
    """
    page = {"metadata": {}, "items": [RICH_POD, pod, pod]}
    data = json.dumps(page, separators=(",", ":") if compact else None).encode()
    exact = [
        projection.project_pod(item, with_status=with_status)
        for item in codec_for("Pod").decode_page(data)["items"]
    ]
    projector = PodListProjector(with_status=with_status)
    fast = [pod for _, pod in projector.decode_page(data)["entries"]]
    assert fast == exact  # the last copy comes from the previous pod or the memo


@pytest.mark.parametrize(
    ("pod", "path"),
    [
        pytest.param(
            _with(RICH_POD, ["metadata", "creationTimestamp"], "nonsense"),
            "metadata.creationTimestamp",
            id="bad-time",
        ),
        pytest.param(
            _with(
                RICH_POD,
                ["spec", "containers"],
                [{"name": "a", "resources": {"requests": {"cpu": "-4"}}}],
            ),
            "spec.containers[0].resources.requests.cpu",
            id="negative-cpu",
        ),
        pytest.param(
            _with(
                RICH_POD,
                ["spec", "affinity"],
                {"a": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{}]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},
            ),
            "spec.affinity",
            id="nested-too-deep",
        ),
        pytest.param(
            _with(
                RICH_POD,
                ["spec", "topologySpreadConstraints"],
                [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
            ),
            "spec.topologySpreadConstraints[0].maxSkew",
            id="max-skew-0",
        ),
        pytest.param(
            _with(
                RICH_POD,
                ["spec", "affinity"],
                {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "topologyKey": "zone",
                                "labelSelector": {
                                    "matchExpressions": [{"key": "app", "operator": "Near"}]
                                },
                            }
                        ]
                    }
                },
            ),
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
            ".labelSelector.matchExpressions[0]",
            id="unknown-operator",
        ),
        pytest.param(
            _with(RICH_POD, ["spec", "tolerations"], [{"key": "k", "operator": "Roughly"}]),
            "spec.tolerations[0]",
            id="unknown-toleration-operator",
        ),
        pytest.param(
            _with(RICH_POD, ["spec", "priority"], 2**31), "spec.priority", id="priority-int32"
        ),
    ],
)
def test_pods_the_api_server_would_not_store_are_refused_on_both_paths(
    pod: dict[str, Any], path: str
) -> None:
    """A bad timestamp, a negative quantity, a sub-object nested too deep, an operator or a
    ``maxSkew`` the API server refuses, a priority beyond int32: the exact path raises
    ``ProjectionError`` at the field's path, and the list path leaves the pod out as
    ``Unprojected`` with the same reason (the cache counts it; the others are kept)."""
    with pytest.raises(projection.ProjectionError) as raised:
        projection.project_pod(pod)
    assert raised.value.path == path
    data = json.dumps({"metadata": {}, "items": [RICH_POD, pod]}).encode()
    entries = list(PodListProjector().decode_page(data)["entries"])
    assert not isinstance(entries[0], Unprojected)
    assert isinstance(entries[1], Unprojected)
    assert path in entries[1].error


def _pod_store(
    data: bytes, decoding: Any, projections: Projections = PROJECTIONS
) -> dict[str, Any]:
    state = ClusterState(None, projections, decoding=decoding)  # type: ignore[arg-type]  # never connects
    listing = state.pods.decode_page(data)
    state.pods._apply("REPLACE", state.pods._project_all(listing), "1")
    assert state.pods.skipped == 0
    return dict(state.pods.store)


def test_every_fixture_pod_caches_as_by_json() -> None:
    """The pod cache filled through the fast path equals the one filled through ``json.loads``."""
    with gzip.open(CLUSTER_1K) as stream:
        items = [item for item in json.load(stream)["items"] if item["kind"] == "Pod"]
    data = json.dumps({"metadata": {"resourceVersion": "9"}, "items": items}).encode()
    fast = _pod_store(data, "msgspec")
    assert len(fast) == len(items)
    assert fast == _pod_store(data, "json")


def test_every_fixture_pod_caches_as_by_json_without_pod_status() -> None:
    """The same, for a policy none of whose plugins reads the pod-state details (the parity
    policy): both paths leave them out alike."""
    with gzip.open(CLUSTER_1K) as stream:
        items = [item for item in json.load(stream)["items"] if item["kind"] == "Pod"]
    data = json.dumps({"metadata": {}, "items": items}, separators=(",", ":")).encode()
    policy = load_policy(CLUSTER_1K.parent / "policy-lnu-dup.yaml")
    chosen = projections(with_status=policy.reads_pod_status)
    assert not chosen.pod_status
    fast = _pod_store(data, "msgspec", chosen)
    assert len(fast) == len(items)
    assert fast == _pod_store(data, "json", chosen)


def test_equal_statuses_of_pods_created_apart_keep_their_own_ages() -> None:
    """Two pods in a row whose conditions moved at the same instant but which were created a
    minute apart keep their own times since creation: the previous pod's status is reused
    only for a pod created at the same time."""
    timed = _with(
        RICH_POD,
        ["status", "conditions"],
        [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-22T00:05:00Z"}],
    )
    later = _with(timed, ["metadata", "creationTimestamp"], "2026-11-22T00:01:00Z")
    data = json.dumps({"metadata": {}, "items": [timed, later]}, separators=(",", ":")).encode()
    exact = [projection.project_pod(item) for item in json.loads(data)["items"]]
    fast = [pod for _, pod in PodListProjector().decode_page(data)["entries"]]
    assert fast == exact
    assert fast[0].extra != fast[1].extra
