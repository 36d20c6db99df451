"""Every query of the Grafana dashboard and the PrometheusRule parses as PromQL and asks only
for series the code exports, with labels they carry (or the ServiceMonitors add), and the
dashboard and the alerts cover what the install story promises."""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import promql_parser as promql
import pytest
import yaml

from agent.config.agent import DEFAULT_METRICS_BIND_ADDRESS
from agent.descheduler.options import DeschedulerOptions
from tests.harness.repository import MANIFESTS
from tests.unit.monitoring import catalogue

MONITORING = MANIFESTS / "overlays" / "monitoring"
JOBS = {
    "kubelet-companion-agent": ("agent", DEFAULT_METRICS_BIND_ADDRESS),
    "kubelet-companion-descheduler": ("descheduler", DeschedulerOptions().metrics_bind_address),
}
"""Each Service (whose name is the ``job`` label) -> the component it selects, its port."""
OPERATOR_TARGET_LABELS = frozenset(
    {"job", "instance", "namespace", "pod", "container", "service", "endpoint"}
)
"""What prometheus-operator puts on every series a ServiceMonitor scrapes."""
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h", "$node": ".*"}
Labels = frozenset[str]


def _docs(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((MONITORING / name).read_text()) if doc]


@functools.cache
def _catalogues() -> dict[str, catalogue.Catalogue]:
    return {"agent": catalogue.agent(), "descheduler": catalogue.descheduler()}


def _target_labels(job: str) -> Labels:
    """Operator labels plus the ones the job's ServiceMonitor relabels in."""
    (monitor,) = [m for m in _docs("servicemonitors.yaml") if m["metadata"]["name"] == job]
    added = {
        relabel["targetLabel"]
        for endpoint in monitor["spec"]["endpoints"]
        for relabel in endpoint.get("relabelings", [])
        if relabel.get("action", "replace") == "replace"
    }
    return OPERATOR_TARGET_LABELS | added


# -- the queries -----------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    where: str
    expr: str
    uses: Labels = frozenset()
    """Labels the query's consumer reads from its result (legend, alert template)."""


def _legend_labels(text: str) -> Labels:
    return frozenset(re.findall(r"\{\{\s*(\w+)\s*\}\}", text))


def _template_labels(text: str) -> Labels:
    return frozenset(re.findall(r"\$labels\.(\w+)", text))


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def _dashboard() -> dict[str, Any]:
    return dict(json.loads((MONITORING / "dashboard.json").read_text()))


def dashboard_queries() -> list[Query]:
    dashboard = _dashboard()
    queries = [
        Query(
            f"panel {panel['title']!r} {target['refId']}",
            target["expr"],
            _legend_labels(target.get("legendFormat", "")),
        )
        for panel in _panels(dashboard["panels"])
        for target in panel.get("targets", [])
    ]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        text = variable["query"]["query"]
        # label_values(selector, label): the selector is PromQL, the label must be on it.
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", text)
        assert match, f"variable {variable['name']}: unsupported query {text}"
        queries.append(
            Query(f"variable {variable['name']}", match.group(1), frozenset([match.group(2)]))
        )
    return queries


def rule_queries() -> list[Query]:
    (rule,) = _docs("prometheusrule.yaml")
    return [
        Query(
            f"alert {entry['alert']}",
            entry["expr"],
            _template_labels(" ".join(entry.get("annotations", {}).values())),
        )
        for group in rule["spec"]["groups"]
        for entry in group["rules"]
    ]


def _grafana_free(expr: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    assert "$" not in expr, f"unknown Grafana variable in {expr}"
    return expr


# -- label inference over the parsed query ---------------------------------------------


@dataclass
class Checker:
    """Walks a parsed query, computing the labels each node yields, noting every misuse."""

    problems: list[str] = field(default_factory=list)

    def selector(self, node: Any) -> Labels:
        name = node.name
        matchers = {m.name: m.value for m in node.matchers.matchers}
        job = matchers.get("job")
        if job not in JOBS:
            self.problems.append(f"{name}: no job matcher naming one of {sorted(JOBS)}")
            return frozenset()
        series = _catalogues()[JOBS[job][0]]
        if name not in series:
            self.problems.append(f"{name}: not exported by the {JOBS[job][0]}")
            return frozenset()
        labels = series[name] | _target_labels(job) | {"__name__"}
        for label in matchers.keys() - labels:
            self.problems.append(f"{name}: has no label {label!r}")
        return labels

    def need(self, wanted: Labels | list[str], have: Labels | None, what: str) -> None:
        missing = set(wanted) - (have or frozenset())
        if missing:
            self.problems.append(f"{what}: {sorted(missing)} not on its operand")

    def labels(self, node: Any) -> Labels | None:  # noqa: PLR0911 - one branch per node type
        """The labels ``node``'s result carries; ``None`` for a scalar or a string."""
        kind = type(node).__name__
        if kind == "VectorSelector":
            return self.selector(node)
        if kind == "MatrixSelector":
            return self.selector(node.vector_selector)
        if kind in {"ParenExpr", "UnaryExpr", "SubqueryExpr"}:
            return self.labels(node.expr)
        if kind in {"NumberLiteral", "StringLiteral"}:
            return None
        if kind == "Call":
            return self.call(node)
        if kind == "AggregateExpr":
            return self.aggregate(node)
        if kind == "BinaryExpr":
            return self.binary(node)
        raise AssertionError(f"unhandled PromQL node {kind}")

    def call(self, node: Any) -> Labels | None:
        args = [self.labels(arg) for arg in node.args]
        name = node.func.name
        if name == "histogram_quantile":
            self.need(["le"], args[1], "histogram_quantile")
            return (args[1] or frozenset()) - {"le"}
        if name in {"time", "scalar", "pi"}:
            return None
        vectors = [labels for labels in args if labels is not None]
        return frozenset().union(*vectors) if vectors else None

    def aggregate(self, node: Any) -> Labels:
        inner = self.labels(node.expr) or frozenset()
        modifier = node.modifier
        grouping = frozenset(modifier.labels) if modifier is not None else frozenset()
        by = modifier is not None and modifier.type == promql.AggModifierType.By
        if by:
            self.need(grouping, inner, f"{node.op} by {sorted(grouping)}")
        if str(node.op) in {"topk", "bottomk"}:
            return inner
        if modifier is None:
            return frozenset()
        return grouping if by else inner - grouping

    def binary(self, node: Any) -> Labels | None:
        left, right = self.labels(node.lhs), self.labels(node.rhs)
        if left is None or right is None:
            return left if right is None else right
        modifier = node.modifier
        matching = modifier.matching if modifier is not None else None
        if matching is not None and matching.type == promql.LabelModifierType.Include:
            self.need(matching.labels, left, f"left of {node.op} on")
            self.need(matching.labels, right, f"right of {node.op} on")
        group = frozenset(modifier.group_labels or []) if modifier is not None else frozenset()
        if str(node.op) == "or":
            return left | right
        if modifier is not None and modifier.card == promql.VectorMatchCardinality.ManyToOne:
            self.need(group, right, "group_left")
            return left | group
        if modifier is not None and modifier.card == promql.VectorMatchCardinality.OneToMany:
            self.need(group, left, "group_right")
            return right | group
        return left


ALL_QUERIES = dashboard_queries() + rule_queries()


@pytest.mark.parametrize("query", [pytest.param(q, id=q.where) for q in ALL_QUERIES])
def test_every_query_parses_and_uses_only_exported_series_and_labels(query: Query) -> None:
    """The query is valid PromQL (promql-parser), every selector names one of our jobs and a
    series that job's code exports, and every label it matches, groups or joins on, or reads
    in its legend or alert text, is on the series (or added by the ServiceMonitor)."""
    expr = promql.parse(_grafana_free(query.expr))
    checker = Checker()
    result = checker.labels(expr)
    checker.need(query.uses, result, "legend or alert template")
    assert not checker.problems, f"{query.where}: {query.expr}\n" + "\n".join(checker.problems)


@pytest.mark.parametrize(
    ("expr", "problem"),
    [
        pytest.param('kubelet_companion_lock_held{job="kubelet-companion-agent"}',
                     "not exported", id="unknown-metric"),
        pytest.param('descheduler_pods_evicted_total{job="kubelet-companion-agent"}',
                     "not exported", id="wrong-component"),
        pytest.param("kubelet_companion_inhibitor_lock_held", "no job matcher", id="no-job"),
        pytest.param('kubelet_companion_inhibitor_lock_held{job="kubelet-companion-agent", '
                     'reason="x"}', "no label 'reason'", id="unknown-matcher-label"),
        pytest.param('sum by (plugin) (descheduler_pods_evicted_total{'
                     'job="kubelet-companion-descheduler"})', "['plugin']", id="unknown-by-label"),
        pytest.param('kubelet_companion_descheduler_nodereports{'
                     'job="kubelet-companion-descheduler"} and on (node) '
                     'kubelet_companion_descheduler_leader{job="kubelet-companion-descheduler"}',
                     "['node']", id="unknown-on-label"),
    ],
)  # fmt: skip
def test_the_checker_catches_a_wrong_query(expr: str, problem: str) -> None:
    """A misspelt metric, one of the other component, a missing job, and labels the series
    lack (matcher, by, on) are each reported."""
    checker = Checker()
    checker.labels(promql.parse(expr))
    assert any(problem in line for line in checker.problems), checker.problems


def test_a_legend_naming_a_label_the_result_lacks_is_caught() -> None:
    """``{{node}}`` in the legend of ``sum(...)`` (which keeps no labels) is reported."""
    checker = Checker()
    result = checker.labels(
        promql.parse('sum(kubelet_companion_inhibitor_lock_held{job="kubelet-companion-agent"})')
    )
    checker.need(_legend_labels("{{node}}"), result, "legend")
    assert checker.problems


def test_a_broken_expression_does_not_parse() -> None:
    """promql-parser rejects what Prometheus would (here: a comparison of two scalars)."""
    with pytest.raises(ValueError, match="BOOL"):
        promql.parse("time() > 1")


# -- coverage of the promised panels and alerts ----------------------------------------


PROMISED_PANELS = {
    "shutdown-start": "kubelet_companion_graceful_shutdown_start_time_seconds",
    "shutdown-end": "kubelet_companion_graceful_shutdown_end_time_seconds",
    "phase-durations": "kubelet_companion_shutdown_phase_duration_seconds",
    "inhibitor-lock": "kubelet_companion_inhibitor_lock_held",
    "swap-use": "node_swap_usage_bytes",
    "swap-limits": "container_swap_limit_bytes",
    "swap-expected-limits": "kubelet_companion_container_swap_limit_expected_bytes",
    "swap-drift": "kubelet_companion_swap_limit_drift_containers",
    "readiness-gate-wait": "kubelet_companion_readiness_gate_wait_seconds",
    "nodereport-age": "kubelet_companion_report_last_write_timestamp_seconds",
    "stale-nodereports": "kubelet_companion_descheduler_nodereports",
    "evictions": "descheduler_pods_evicted_total",
    "loop-duration": "descheduler_loop_duration_seconds_bucket",
}


@pytest.mark.parametrize(
    "series", [pytest.param(series, id=subject) for subject, series in PROMISED_PANELS.items()]
)
def test_the_dashboard_has_a_panel_for(series: str) -> None:
    """Each subject the install story promises is queried by at least one panel."""
    exprs = [query.expr for query in dashboard_queries() if query.where.startswith("panel")]
    assert any(re.search(rf"\b{series}\b", expr) for expr in exprs), series


def test_evictions_are_shown_by_strategy_and_result() -> None:
    """The evictions panel groups by both strategy and result."""
    exprs = [q.expr for q in dashboard_queries() if "descheduler_pods_evicted_total" in q.expr]
    assert any(re.search(r"by \(strategy, result\)", expr) for expr in exprs)


REQUIRED_ALERTS = {
    "no-lock": ("KubeletCompanionNoInhibitorLock", "5m", "inhibitor_lock_held"),
    "logind-delay": ("KubeletCompanionLogindDelayTooShort", None, "inhibit_delay_too_short"),
    "gate-held": ("KubeletCompanionReadinessGateHeld", "15m", "readiness_gate_held"),
    "swap-drift": ("KubeletCompanionSwapDrift", None, "swap_limit_drift_containers"),
    "stale-reports": ("KubeletCompanionNodeReportsStale", None, 'state="stale"'),
    "eviction-errors": ("DeschedulerEvictionErrors", None, 'result="error"'),
    "no-leader": ("DeschedulerNoLeader", None, "descheduler_leader"),
}


@pytest.mark.parametrize(
    ("alert", "duration", "reads"),
    [pytest.param(*promised, id=subject) for subject, promised in REQUIRED_ALERTS.items()],
)
def test_the_promised_alert_exists(alert: str, duration: str | None, reads: str) -> None:
    """The alert is there, reads what it is about, waits ``for`` the promised time, and has
    a severity and a summary."""
    (rule,) = _docs("prometheusrule.yaml")
    entries = {e["alert"]: e for group in rule["spec"]["groups"] for e in group["rules"]}
    entry = entries[alert]
    assert reads in entry["expr"]
    if duration is not None:
        assert entry["for"] == duration
    assert entry["labels"]["severity"] in {"info", "warning", "critical"}
    assert entry["annotations"]["summary"]


# -- the overlay's own objects ---------------------------------------------------------


def test_each_service_selects_its_component_on_the_codes_default_port() -> None:
    """The Services (named as the jobs the queries select) target the components' pods on
    the port of the code's default metrics address, and each has a ServiceMonitor."""
    services = {s["metadata"]["name"]: s for s in _docs("services.yaml")}
    monitors = {m["metadata"]["name"]: m for m in _docs("servicemonitors.yaml")}
    assert set(services) == set(JOBS) == set(monitors)
    for job, (_, address) in JOBS.items():
        spec = services[job]["spec"]
        assert spec["selector"] == {"app.kubernetes.io/name": job}
        assert spec["ports"][0]["port"] == int(address.rpartition(":")[2])
        selector = monitors[job]["spec"]["selector"]["matchLabels"]
        assert selector.items() <= services[job]["metadata"]["labels"].items()
        assert monitors[job]["spec"]["endpoints"][0]["port"] == spec["ports"][0]["name"]


def test_the_dashboard_ships_as_a_sidecar_configmap() -> None:
    """The kustomization builds on the base, lists every manifest here, and generates the
    dashboard ConfigMap from dashboard.json with the label grafana_dashboard: "1"."""
    kustomization = yaml.safe_load((MONITORING / "kustomization.yaml").read_text())
    assert kustomization["resources"][0] == "../../base"
    manifests = {p.name for p in MONITORING.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"][1:]) == manifests
    (generator,) = kustomization["configMapGenerator"]
    assert generator["options"]["labels"]["grafana_dashboard"] == "1"
    assert [entry.split("=")[1] for entry in generator["files"]] == ["dashboard.json"]


def test_dashboard_panels_have_unique_ids_and_descriptions() -> None:
    """Grafana needs unique panel ids; every non-row panel says what it shows."""
    panels = list(_panels(_dashboard()["panels"]))
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids))
    assert all(panel.get("description") for panel in panels if panel["type"] != "row")


def check_rendered(docs: list[dict[str, Any]]) -> None:
    """Each rendered Service selects the pods of its workload and names a container port
    they have; each ServiceMonitor selects a rendered Service; the dashboard is inside."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc)
    workloads = by_kind.get("DaemonSet", []) + by_kind.get("Deployment", [])
    services = by_kind["Service"]
    for service in services:
        selector = service["spec"]["selector"].items()
        (pods,) = [
            w["spec"]["template"] for w in workloads
            if selector <= w["spec"]["template"]["metadata"]["labels"].items()
        ]  # fmt: skip
        ports = {p["name"] for c in pods["spec"]["containers"] for p in c.get("ports", [])}
        assert service["spec"]["ports"][0]["targetPort"] in ports
    for monitor in by_kind["ServiceMonitor"]:
        wanted = monitor["spec"]["selector"]["matchLabels"].items()
        assert [s for s in services if wanted <= s["metadata"]["labels"].items()]
    (dashboard,) = [c for c in by_kind["ConfigMap"] if "kubelet-companion.json" in c["data"]]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["kubelet-companion.json"]) == _dashboard()


def test_the_overlay_renders_on_the_base() -> None:
    """``kubectl kustomize`` renders the overlay on the base, and the Services,
    ServiceMonitors and dashboard ConfigMap fit the rendered workloads."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: it renders the kustomization")
    if not (MONITORING.parents[1] / "base" / "kustomization.yaml").exists():
        pytest.skip("daemonset/base has no kustomization yet")
    rendered = subprocess.run(
        [kubectl, "kustomize", str(MONITORING)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert rendered.returncode == 0, rendered.stderr
    check_rendered([doc for doc in yaml.safe_load_all(rendered.stdout) if doc])
