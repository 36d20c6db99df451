"""Reading the metrics sources' answers as upstream v0.36 reads them: NodeMetrics smoothed
by its collector's EWMA, PodMetrics summed per pod, and a Prometheus vector turned into one
ratio per node with upstream's checks. Expected numbers are worked out by hand from
upstream's ``metricscollector.go`` (float64 arithmetic, Go's ``math.Round``)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from agent.descheduler.cache.metricsserver import (
    NodeMetricsSmoother,
    node_sample,
    pod_usage,
    weighted_average,
)
from agent.descheduler.cache.prometheussamples import samples_from
from agent.descheduler.core.cycle import run_cycle
from agent.descheduler.model.metricsusage import KubernetesMetrics
from agent.prometheus.answer import QueryAnswer, Sample, decode_answer
from agent.prometheus.errors import BadAnswer, Unavailable
from tests.harness.deschedulerstate import node, policy, snapshot

GI = 2**30


def _node_metrics(name: str, cpu: str, memory: str = "1Gi") -> dict[str, Any]:
    return {"metadata": {"name": name}, "usage": {"cpu": cpu, "memory": memory}}


@pytest.mark.parametrize(
    ("previous", "value", "expected"),
    [
        pytest.param(2, 1000, 102, id="0.9x2+0.1x1000=101.8"),
        pytest.param(5, 0, 5, id="a-half-goes-up-as-in-go"),
        pytest.param(3000, 1000, 2800, id="falling"),
        pytest.param(200, 3000, 480, id="rising"),
        pytest.param(GI, GI, GI, id="steady-memory"),
    ],
)
def test_weighted_average_is_upstreams(previous: int, value: int, expected: int) -> None:
    """``round(0.9 x previous + (1 - 0.9) x sample)`` with Go's rounding (a half goes up;
    Python's ``round`` would give 4 for 4.5)."""
    assert weighted_average(previous, value) == expected


def test_first_sample_is_taken_whole_then_smoothed_and_kept_when_missing() -> None:
    """A node's first sample is its usage (cpu rounded up to the millicore, as
    ``MilliValue()``); later ones are smoothed; a node absent from a sample keeps its value."""
    smoother = NodeMetricsSmoother()
    smoother.update(node_sample([_node_metrics("a", "1234567n"), _node_metrics("b", "3")]).usage)
    assert smoother.nodes == {"a": {"cpu": 2, "memory": GI}, "b": {"cpu": 3000, "memory": GI}}
    smoother.update(node_sample([_node_metrics("a", "1")]).usage)
    assert smoother.nodes == {"a": {"cpu": 102, "memory": GI}, "b": {"cpu": 3000, "memory": GI}}


def test_smoothed_usage_classifies_as_upstream() -> None:
    """Two samples, then a cycle: x fell from 3000m to 1000m but its smoothed 2800m (70 %)
    is still over a 50 % target; y rose from 200m to 3000m but its smoothed 480m (12 %) is
    still under 20 %; z steady at 1200m (30 %) is appropriately utilized."""
    smoother = NodeMetricsSmoother()
    for cpus in (("3", "200m", "1200m"), ("1", "3", "1200m")):
        items = [_node_metrics(n, cpu) for n, cpu in zip("xyz", cpus, strict=True)]
        smoother.update(node_sample(items).usage)
    state = snapshot(
        node("x"), node("y"), node("z"), kubernetes_metrics=KubernetesMetrics(nodes=smoother.nodes)
    )
    args = {
        "thresholds": {"cpu": 20},
        "targetThresholds": {"cpu": 50},
        "metricsUtilization": {"source": "KubernetesMetrics"},
    }
    plan = run_cycle(
        policy(("LowNodeUtilization", args), metricsProviders=[{"source": "KubernetesMetrics"}]),
        state,
    )
    assert {f["node"]: (f["category"], f["usage"]["cpu"]) for f in plan.nodes} == {
        "x": ("overutilized", 2800),
        "y": ("underutilized", 480),
        "z": ("appropriately utilized", 1200),
    }


def test_unreadable_node_metrics_are_left_out_and_counted() -> None:
    """An item without a name or with a quantity that does not parse is missing (as a failed
    Get is upstream), and counted."""
    read = node_sample([{"usage": {"cpu": "1", "memory": "1"}}, _node_metrics("a", "lots")])
    assert (read.usage, read.unreadable) == ({}, 2)


def test_pod_usage_sums_containers_exactly_then_rounds_up() -> None:
    """Containers are summed exactly (two 1.5m make 3m, not 4m) and rounded up once; a
    container without cpu leaves the pod without usage, in upstream's words."""
    read = pod_usage(
        [
            {
                "metadata": {"name": "web", "namespace": "shop"},
                "containers": [
                    {"name": "app", "usage": {"cpu": "1500u", "memory": "100Mi"}},
                    {"name": "side", "usage": {"cpu": "1500u", "memory": "1"}},
                ],
            },
            {
                "metadata": {"name": "db", "namespace": "shop"},
                "containers": [{"name": "pg", "usage": {"memory": "1Gi"}}],
            },
        ]
    )
    assert read.usage == {"shop/web": {"cpu": 3, "memory": 100 * 2**20 + 1}}
    assert read.problems == {"shop/db": 'container "pg" is missing "cpu" resource'}


def _answer(*samples: tuple[dict[str, str], float], kind: str = "vector") -> QueryAnswer:
    return QueryAnswer(kind, tuple(Sample(labels, value) for labels, value in samples))


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        pytest.param(
            _answer(({"instance": "a"}, 0.5), ({"instance": "b", "job": "x"}, 1.0)),
            {"a": 0.5, "b": 1.0},
            id="one-ratio-per-node",
        ),
        pytest.param(
            _answer(kind="matrix"),
            'expected query results to be of type "vector", got "matrix" instead',
            id="not-a-vector",
        ),
        pytest.param(
            _answer(({"node": "a"}, 0.5)),
            "the collected metrics sample is missing 'instance' key",
            id="no-instance-label",
        ),
        pytest.param(
            _answer(({"instance": "a"}, 1.5)),
            'the collected metrics sample for "a" has value 1.5 outside of <0; 1> interval',
            id="above-one",
        ),
        pytest.param(
            _answer(({"instance": "a"}, -2.0)),
            'the collected metrics sample for "a" has value -2 outside of <0; 1> interval',
            id="negative",
        ),
        pytest.param(
            _answer(({"instance": "a"}, math.inf)),
            'the collected metrics sample for "a" has value +Inf outside of <0; 1> interval',
            id="infinite",
        ),
        pytest.param(
            _answer(({"instance": "a"}, math.nan)),
            'the collected metrics sample for "a" has value NaN',
            id="not-a-number",
        ),
        pytest.param(
            _answer(({"instance": "a", "job": "x"}, 0.1), ({"instance": "a", "job": "y"}, 0.9)),
            'the query returned more than one sample for "a": it must return one per node',
            id="two-samples-for-a-node",
        ),
        pytest.param(
            Unavailable("http://p/api/v1/query: HTTP 503: unavailable"),
            "unable to capture prometheus metrics: http://p/api/v1/query: HTTP 503: unavailable",
            id="query-failed",
        ),
    ],
)
def test_samples_as_upstream_checks_them(
    answer: QueryAnswer | Unavailable, expected: dict[str, float] | str
) -> None:
    """A vector becomes one ratio per ``instance``; anything upstream refuses (or we refuse
    on purpose: NaN, a node twice) becomes the query's error, in upstream's words."""
    samples = samples_from("q", answer)
    if isinstance(expected, str):
        assert (samples.error, dict(samples.ratios)) == (expected, {})
    else:
        assert (samples.error, dict(samples.ratios)) == ("", expected)


def test_an_answer_is_decoded_from_prometheus_json() -> None:
    """Values travel as strings (``NaN`` included) and labels as a map; warnings are kept."""
    body = {
        "status": "success",
        "warnings": ["partial"],
        "data": {
            "resultType": "vector",
            "result": [
                {"metric": {"instance": "a"}, "value": [1.5, "0.25"]},
                {"metric": {"instance": "b"}, "value": [1.5, "NaN"]},
            ],
        },
    }
    answer = decode_answer(json.dumps(body).encode())
    assert answer.result_type == "vector"
    assert answer.warnings == ("partial",)
    assert [(s.labels["instance"], s.value) for s in answer.samples[:1]] == [("a", 0.25)]
    assert math.isnan(answer.samples[1].value)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(b"<html>bad gateway</html>", "the answer is not JSON", id="html"),
        pytest.param(b"[]", "the answer is not a JSON object", id="a-list"),
        pytest.param(
            b'{"status":"error","errorType":"bad_data","error":"parse error at char 3"}',
            "bad_data: parse error at char 3",
            id="prometheus-error",
        ),
        pytest.param(
            b'{"status":"success","data":{"resultType":"vector","result":[{"value":[1,2]}]}}',
            'result[0].value is not [time, "number"]',
            id="value-not-a-string",
        ),
        pytest.param(
            b'{"status":"success","data":{"resultType":"vector","result":'
            b'[{"metric":{},"value":[1,"lots"]}]}}',
            "result[0].value lots is not a number",
            id="value-not-a-number",
        ),
    ],
)
def test_garbage_is_a_bad_answer_naming_the_problem(data: bytes, reason: str) -> None:
    """What is not a Prometheus answer raises ``BadAnswer`` saying what is wrong."""
    with pytest.raises(BadAnswer, match="^" + reason.replace("[", r"\[").replace("(", r"\(")):
        decode_answer(data)
