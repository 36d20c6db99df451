"""``descheduler plan --usage FILE``: what the metrics sources said, for a plan on a snapshot.

A snapshot holds objects; usage from a metrics source is not one, so it comes in a file of
its own, made of the sources' own answers (JSON; gzip accepted; bounded like the snapshot)::

    {"prometheus": {"<query>": <its /api/v1/query answer, as curl prints it>},
     "nodeMetrics": <kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes>,
     "podMetrics": <kubectl get --raw /apis/metrics.k8s.io/v1beta1/pods>}

Each part is read as the live loop reads it: a Prometheus answer with upstream's checks
(``prometheussamples``), NodeMetrics as the collector's first sample (upstream's smoothing
starts from it), PodMetrics summed per pod. ``"nodeMetrics": null`` plans as a cluster
without metrics-server (the agents' NodeReports stand in, named in the plan).

What the policy reads and the file lacks is an input error (exit 2, naming the query or the
part): the plan never runs without the source its policy names.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.config.errors import ConfigError, FieldError
from agent.descheduler.cache.metricsserver import node_sample, pod_usage
from agent.descheduler.cache.prometheussamples import samples_from
from agent.descheduler.cache.snapshotfile import read_bytes
from agent.descheduler.model.metricsusage import KubernetesMetrics, PrometheusSamples
from agent.prometheus.answer import answer_from
from agent.prometheus.errors import BadAnswer

KEYS = ("prometheus", "nodeMetrics", "podMetrics")
DEFAULT_MAX_BYTES = 1 << 30


@dataclass(frozen=True)
class UsageFile:
    prometheus: Mapping[str, PrometheusSamples] = field(default_factory=dict)
    kubernetes_metrics: KubernetesMetrics | None = None


def _items(value: Any, key: str, errors: list[FieldError]) -> list[Any]:
    items = value.get("items") if isinstance(value, dict) else None
    if not isinstance(items, list):
        errors.append(FieldError(f"{key}.items", "expected a list (a metrics.k8s.io List)"))
        return []
    return items


def _kubernetes_metrics(
    body: Mapping[str, Any], errors: list[FieldError]
) -> KubernetesMetrics | None:
    if "nodeMetrics" not in body:
        return None
    if body["nodeMetrics"] is None:
        return KubernetesMetrics(served=False)
    nodes = node_sample(_items(body["nodeMetrics"], "nodeMetrics", errors))
    pods = pod_usage(_items(body.get("podMetrics") or {"items": []}, "podMetrics", errors))
    for what, read in (("nodeMetrics", nodes), ("podMetrics", pods)):
        if read.unreadable:
            errors.append(FieldError(f"{what}.items", f"{read.unreadable} item(s) cannot be read"))
    return KubernetesMetrics(nodes=nodes.usage, pods=pods.usage, pod_problems=pods.problems)


def parse_usage(body: Any, source: str) -> UsageFile:
    """A parsed usage file; ``ConfigError`` with every problem."""
    if not isinstance(body, dict):
        raise ConfigError(source, [FieldError("", "the document must be a JSON object")])
    errors = [
        FieldError(key, f"unknown field (known: {', '.join(KEYS)})")
        for key in sorted(body)
        if key not in KEYS
    ]
    queries = body.get("prometheus") or {}
    prometheus: dict[str, PrometheusSamples] = {}
    if not isinstance(queries, dict):
        errors.append(FieldError("prometheus", "expected a map of query to its answer"))
        queries = {}
    for query, answer in queries.items():
        try:
            prometheus[str(query)] = samples_from(str(query), answer_from(answer))
        except BadAnswer as error:
            errors.append(FieldError(f"prometheus[{query!r}]", str(error)))
    kubernetes = _kubernetes_metrics(body, errors)
    if errors:
        raise ConfigError(source, errors)
    return UsageFile(prometheus, kubernetes)


def load_usage(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES) -> UsageFile:
    """The usage file at ``path`` (``--usage``)."""
    data = read_bytes(path, limit=max_bytes)
    try:
        body = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise ConfigError(str(path), [FieldError("", f"not JSON: {error}")]) from error
    return parse_usage(body, str(path))


def missing(
    usage: UsageFile | None, queries: tuple[str, ...], kubernetes: bool, flag: str = "--usage"
) -> list[FieldError]:
    """What the policy reads (``queries``, metrics.k8s.io) that ``usage`` does not hold."""
    if usage is None:
        needs = [f"Prometheus query {q!r}" for q in queries]
        needs += ["metrics.k8s.io (nodeMetrics, podMetrics)"] if kubernetes else []
        if not needs:
            return []
        return [
            FieldError(
                flag,
                f"the policy reads {', '.join(needs)}: give their answers in a usage file "
                "(docs/plan.md)",
            )
        ]
    errors = [
        FieldError(f"{flag}: prometheus", f"no answer for the query {q!r} the policy reads")
        for q in queries
        if q not in usage.prometheus
    ]
    if kubernetes and usage.kubernetes_metrics is None:
        errors.append(
            FieldError(
                f"{flag}: nodeMetrics",
                "the policy reads metrics.k8s.io; give nodeMetrics (null: not served)",
            )
        )
    return errors
