"""A Prometheus query's answer as the utilization plugins read it (upstream's
``NodeUsageFromPrometheusMetrics``): one ratio per node, or why there is none.

Upstream's rules and words: the answer must be a vector ("expected query results to be of
type "vector", got "matrix" instead"); every sample names its node in the ``instance`` label
("the collected metrics sample is missing 'instance' key"); every value lies in [0, 1]
("… has value 1.5 outside of <0; 1> interval"); a query that failed is "unable to capture
prometheus metrics: …". Any of these is the answer's error, and the plugins reading the
query fail with it.

Where we differ on purpose: a ``NaN`` value is refused (upstream's range check lets it
through and turns it into an arbitrary integer); two samples for one node are refused
(upstream keeps whichever came last, so the node's usage would depend on the answer's
order).
"""

from __future__ import annotations

import math

from agent.descheduler.model.metricsusage import PrometheusSamples
from agent.prometheus.answer import VECTOR, QueryAnswer
from agent.prometheus.errors import PrometheusError

INSTANCE = "instance"


def _go_float(value: float) -> str:
    """How Go's ``%v`` prints a sample value (``1.5``, ``2``, ``+Inf``)."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return f"{value:g}" if value == int(value) else repr(value)


def samples_from(query: str, answer: QueryAnswer | PrometheusError) -> PrometheusSamples:
    """The ratios by node in ``answer``, or the reason there are none."""
    if isinstance(answer, PrometheusError):
        return PrometheusSamples(query, error=f"unable to capture prometheus metrics: {answer}")
    if answer.result_type != VECTOR:
        return PrometheusSamples(
            query,
            error=f'expected query results to be of type "{VECTOR}", got '
            f'"{answer.result_type}" instead',
        )
    ratios: dict[str, float] = {}
    for sample in answer.samples:
        node = sample.labels.get(INSTANCE)
        problem = _problem(node, sample.value, ratios)
        if problem:
            return PrometheusSamples(query, error=problem)
        ratios[str(node)] = sample.value
    return PrometheusSamples(query, ratios=ratios)


def _problem(node: str | None, value: float, seen: dict[str, float]) -> str:
    """Why a sample cannot be a node's ratio; "" when it can."""
    if node is None:
        return "the collected metrics sample is missing 'instance' key"
    if math.isnan(value):
        return f'the collected metrics sample for "{node}" has value NaN'
    if value < 0 or value > 1:
        return (
            f'the collected metrics sample for "{node}" has value {_go_float(value)} '
            "outside of <0; 1> interval"
        )
    if node in seen:
        return f'the query returned more than one sample for "{node}": it must return one per node'
    return ""
