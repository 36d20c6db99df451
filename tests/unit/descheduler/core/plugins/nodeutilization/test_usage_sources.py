"""Where LowNodeUtilization and HighNodeUtilization read usage from: a Prometheus query and
metrics.k8s.io as upstream v0.36 reads them (the expected decisions are worked out from
upstream's ``usageclients.go`` and ``nodeutilization.go`` on the same numbers), and ours
(per-resource queries, pods weighed by NodeReports)."""

from __future__ import annotations

from typing import Any

import pytest

from agent.config.errors import ConfigError
from agent.descheduler.core.cycle import run_cycle
from agent.descheduler.model.cluster import NodeUsage
from agent.descheduler.model.metricsusage import KubernetesMetrics
from agent.descheduler.plan.shape import Plan
from tests.harness.deschedulerstate import NOW, node, pod, policy, snapshot
from tests.harness.kubeobjects import owner_ref

LNU = "LowNodeUtilization"
HNU = "HighNodeUtilization"
QUERY = "instance:node_cpu:ratio"
PROMETHEUS_PROVIDER = {
    "metricsProviders": [{"source": "Prometheus", "prometheus": {"url": "http://prometheus:9090"}}]
}
METRICS_PROVIDER = {"metricsProviders": [{"source": "KubernetesMetrics"}]}
UPSTREAM_PROMETHEUS = {
    "thresholds": {"MetricResource": 20},
    "targetThresholds": {"MetricResource": 50},
    "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": QUERY}},
}
"""The e2e policy's LowNodeUtilization args, as upstream users write them."""
CPU_ONLY = {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}}
KUBERNETES_METRICS = {**CPU_ONLY, "metricsUtilization": {"source": "KubernetesMetrics"}}


def _three_pods_each(*names: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for name in names:
        items += [node(name), *(pod(f"{name}-{i}", name) for i in range(3))]
    return items


def _evicted(plan: Plan) -> list[str]:
    return [e.name for e in plan.allowed]


def _facts(plan: Plan, key: str, plugin: str = LNU) -> dict[str, Any]:
    return {f["node"]: f.get(key) for f in plan.nodes if f["plugin"] == plugin}


UPSTREAM_SAMPLES = {"a": 0.9, "b": 0.6, "c": 0.505, "d": 0.1, "e": 0.209}


class TestPrometheusAsUpstream:
    SAMPLES = UPSTREAM_SAMPLES

    def _plan(self, args: dict[str, Any] = UPSTREAM_PROMETHEUS, **top: Any) -> Plan:
        state = snapshot(*_three_pods_each(*self.SAMPLES), prometheus={QUERY: self.SAMPLES})
        return run_cycle(policy((LNU, args), **PROMETHEUS_PROVIDER, **top), state)

    def test_classification_on_the_truncated_percentage(self) -> None:
        """A node's MetricResource usage is int(sample x 100) of 100: 0.505 is 50, not above
        a target of 50; 0.209 is 20, at (so under) a threshold of 20."""
        plan = self._plan()
        assert _facts(plan, "category") == {
            "a": "overutilized",
            "b": "overutilized",
            "c": "appropriately utilized",
            "d": "underutilized",
            "e": "underutilized",
        }
        assert _facts(plan, "usage") == {
            "a": {"MetricResource": 90},
            "b": {"MetricResource": 60},
            "c": {"MetricResource": 50},
            "d": {"MetricResource": 10},
            "e": {"MetricResource": 20},
        }
        assert set(_facts(plan, "usageSource").values()) == {"Prometheus"}

    def test_one_eviction_per_over_utilized_node(self) -> None:
        """Without pod usage upstream evicts a single pod from each over-utilized node, the
        hottest node first, whatever the budget would allow."""
        assert _evicted(self._plan()) == ["a-0", "b-0"]

    def test_node_eviction_limit_evicts_that_many_unweighed(self) -> None:
        """With ``evictionLimits.node`` upstream evicts up to that many pods per node, never
        checking the node's usage again (it cannot subtract what it does not know)."""
        args = {**UPSTREAM_PROMETHEUS, "evictionLimits": {"node": 2}}
        assert _evicted(self._plan(args)) == ["a-0", "a-1", "b-0", "b-1"]

    def test_the_total_limit_still_holds(self) -> None:
        """The policy's total limit stops the run after the hottest node's pod."""
        assert _evicted(self._plan(maxNoOfPodsToEvictTotal=1)) == ["a-0"]

    def test_a_node_without_a_sample_fails_the_plugin(self) -> None:
        """A Ready node the query says nothing of fails the plugin with upstream's words,
        before any node is classified: the cycle fails rather than guessing."""
        samples = {k: v for k, v in self.SAMPLES.items() if k != "c"}
        state = snapshot(*_three_pods_each(*self.SAMPLES), prometheus={QUERY: samples})
        plan = run_cycle(policy((LNU, UPSTREAM_PROMETHEUS), **PROMETHEUS_PROVIDER), state)
        assert plan.evictions == []
        assert plan.nodes == []
        assert plan.errors == [
            "profile p: plugin LowNodeUtilization: UsageUnavailable: error getting node usage: "
            "unable to find metric entry for c"
        ]

    def test_a_failed_query_fails_the_plugin_with_its_reason(self) -> None:
        """A query whose run failed (Prometheus down, a garbage answer) fails the plugin
        with that reason."""
        state = snapshot(*_three_pods_each("a", "b"), prometheus={QUERY: "connection refused"})
        plan = run_cycle(policy((LNU, UPSTREAM_PROMETHEUS), **PROMETHEUS_PROVIDER), state)
        assert plan.evictions == []
        assert plan.errors == [
            "profile p: plugin LowNodeUtilization: UsageUnavailable: error getting node usage: "
            "connection refused"
        ]

    def test_high_node_utilization_empties_one_pod_per_cold_node(self) -> None:
        """Ours: HighNodeUtilization on a Prometheus signal takes one pod off each
        under-utilized node per cycle, the coldest first (no pod usage to weigh)."""
        args = {
            "thresholds": {"MetricResource": 20},
            "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": QUERY}},
        }
        state = snapshot(*_three_pods_each(*self.SAMPLES), prometheus={QUERY: self.SAMPLES})
        plan = run_cycle(policy((HNU, args), **PROMETHEUS_PROVIDER), state)
        assert _evicted(plan) == ["d-0", "e-0"]

    def test_no_owner_goes_first_on_every_node(self) -> None:
        """Upstream picks among equal pods in its informer's (random) order; by name ours
        took ``app-00``'s pod on every node, cycle after cycle, however little it used. Now:
        node a's pod by uid (``app-01``'s ``1f…`` before ``app-00``'s ``9c…``); then on b the
        owner not evicted from yet (``app-00``, though ``app-01``'s uid is smaller there); on
        c both were, so by uid again."""
        samples = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.1}
        uids = {
            "a": ("9c", "1f"),
            "b": ("7a", "2b"),
            "c": ("5e", "6d"),
        }
        items: list[dict[str, Any]] = [node("d")]
        for name, (cold, hot) in uids.items():
            items += [
                node(name),
                pod(f"app-00-{name}", name, uid=cold, owner=owner_ref("ReplicaSet", "app-00")),
                pod(f"app-01-{name}", name, uid=hot, owner=owner_ref("ReplicaSet", "app-01")),
            ]
        state = snapshot(*items, prometheus={QUERY: samples})
        plan = run_cycle(policy((LNU, UPSTREAM_PROMETHEUS), **PROMETHEUS_PROVIDER), state)
        assert _evicted(plan) == ["app-01-a", "app-00-b", "app-00-c"]


def _report(name: str, cpu: int, pods: dict[str, int], *, stale: bool = False) -> NodeUsage:
    """A report sampled at the snapshot's time: every pod of the state was running by then."""
    return NodeUsage(
        node=name,
        usage={"cpu": cpu, "memory": 0},
        pod_usage={f"uid-default-{p}": {"cpu": used, "memory": 0} for p, used in pods.items()},
        stale=stale,
        shutting_down=False,
        gated=False,
        agent_stopped=False,
        changed_at=NOW,
    )


PER_RESOURCE = {
    **CPU_ONLY,
    "metricsUtilization": {"source": "Prometheus", "prometheus": {"queries": {"cpu": QUERY}}},
}
PER_RESOURCE_SAMPLES = {"a": 0.75, "b": 0.1, "c": 0.3}


class TestPrometheusPerResourceQueries:
    ARGS = PER_RESOURCE
    SAMPLES = PER_RESOURCE_SAMPLES
    REPORT = _report("a", 3000, {"a-0": 500, "a-1": 400, "a-2": 900})

    def _plan(self, args: dict[str, Any], reports: dict[str, NodeUsage] | None = None) -> Plan:
        state = snapshot(
            *_three_pods_each(*self.SAMPLES),
            prometheus={QUERY: self.SAMPLES},
            node_usage=reports or {},
        )
        return run_cycle(policy((LNU, args), **PROMETHEUS_PROVIDER), state)

    def test_usage_is_the_ratio_of_allocatable(self) -> None:
        """Each resource's usage is its sample times the node's allocatable (4 CPUs here):
        thresholds stay per resource, and the node is over on cpu."""
        plan = self._plan(self.ARGS)
        assert _facts(plan, "usage") == {"a": {"cpu": 3000}, "b": {"cpu": 400}, "c": {"cpu": 1200}}
        assert _facts(plan, "category")["a"] == "overutilized"
        assert _evicted(plan) == ["a-0"]  # no pod usage: one eviction, as upstream

    def test_pods_weighed_by_node_reports_when_asked(self) -> None:
        """With ``podUsage: NodeReports`` the biggest real user goes first and pods go until
        the node is under its target (3000m - 900m - 500m = 1600m <= 2000m)."""
        args = {
            **self.ARGS,
            "metricsUtilization": {**self.ARGS["metricsUtilization"], "podUsage": "NodeReports"},
        }
        assert _evicted(self._plan(args, {"a": self.REPORT})) == ["a-2", "a-0"]

    def test_pods_weighed_only_where_the_report_is_fresh(self) -> None:
        """A stale report weighs nothing: that node keeps upstream's single eviction."""
        args = {
            **self.ARGS,
            "metricsUtilization": {**self.ARGS["metricsUtilization"], "podUsage": "NodeReports"},
        }
        stale = _report("a", 3000, {"a-2": 900}, stale=True)
        assert _evicted(self._plan(args, {"a": stale})) == ["a-0"]


def _metrics(**fields: Any) -> KubernetesMetrics:
    defaults: dict[str, Any] = {
        "nodes": {
            "a": {"cpu": 3000, "memory": 2**30},
            "b": {"cpu": 400, "memory": 2**30},
            "c": {"cpu": 1200, "memory": 2**30},
        },
        "pods": {
            "default/a-0": {"cpu": 500, "memory": 2**20},
            "default/a-1": {"cpu": 400, "memory": 2**20},
        },
        "pod_problems": {"default/a-2": 'container "app" is missing "cpu" resource'},
    }
    return KubernetesMetrics(**{**defaults, **fields})


class TestKubernetesMetricsAsUpstream:
    def _plan(self, metrics: KubernetesMetrics, **kwargs: Any) -> Plan:
        state = snapshot(*_three_pods_each("a", "b", "c"), kubernetes_metrics=metrics, **kwargs)
        return run_cycle(policy((LNU, KUBERNETES_METRICS), **METRICS_PROVIDER), state)

    def test_nodes_classified_on_their_metrics(self) -> None:
        """NodeMetrics decide, not requests (3 x 100m would leave every node under): a at 75 %
        cpu is over, b at 10 % under, c at 30 % appropriately utilized."""
        plan = self._plan(_metrics())
        assert _facts(plan, "category") == {
            "a": "overutilized",
            "b": "underutilized",
            "c": "appropriately utilized",
        }
        assert _facts(plan, "usage")["a"] == {"cpu": 3000, "memory": 2**30, "pods": 3}
        assert set(_facts(plan, "usageSource").values()) == {"KubernetesMetrics"}

    def test_pods_weighed_by_their_pod_metrics_and_skipped_without(self) -> None:
        """Each eviction subtracts the pod's PodMetrics (500m, then 400m: a stays above its
        2000m target at 2100m), and a pod without usable metrics is skipped, as upstream
        logs "unable to get pod usage" and goes on."""
        assert _evicted(self._plan(_metrics())) == ["a-0", "a-1"]

    def test_a_node_without_metrics_fails_the_plugin(self) -> None:
        """A Ready node metrics.k8s.io never reported fails the plugin with upstream's
        words."""
        nodes = {"a": {"cpu": 3000, "memory": 0}, "b": {"cpu": 400, "memory": 0}}
        plan = self._plan(_metrics(nodes=nodes))
        assert plan.evictions == []
        assert plan.errors == [
            "profile p: plugin LowNodeUtilization: UsageUnavailable: error getting node usage: "
            'unable to find node "c" in the collected metrics'
        ]

    def test_a_failed_pod_metrics_list_fails_the_plugin(self) -> None:
        """Without any pod usage upstream would skip every pod and end silently; ours fails
        the plugin, so the cycle says so."""
        plan = self._plan(_metrics(pods={}, pod_problems={}, pods_error="503 Service Unavailable"))
        assert plan.evictions == []
        assert plan.errors == [
            "profile p: plugin LowNodeUtilization: UsageUnavailable: error getting node usage: "
            "unable to get pod usage: 503 Service Unavailable"
        ]

    def test_not_served_falls_back_to_node_reports_by_name(self) -> None:
        """When metrics.k8s.io is not served, the agents' NodeReports stand in and each
        node's facts name the fallback; a node without a report is on requests. On a, the
        reported 900m goes first, then a pod the report does not list, at its requests
        (3000m - 900m - 100m = 2000m: at the target)."""
        reports = {"a": _report("a", 3000, {"a-2": 900})}
        plan = self._plan(KubernetesMetrics(served=False), node_usage=reports)
        assert _facts(plan, "usageSource") == {
            "a": "NodeReports",
            "b": "requests",
            "c": "requests",
        }
        assert _facts(plan, "fallback") == {
            "a": "metrics-api-absent",
            "b": "missing",
            "c": "missing",
        }
        assert _evicted(plan) == ["a-2", "a-0"]

    @pytest.mark.parametrize("args", [{"metricsServer": True}, {"source": "KubernetesMetrics"}])
    def test_metrics_server_and_kubernetes_metrics_read_the_same(
        self, args: dict[str, Any]
    ) -> None:
        """Upstream's deprecated ``metricsServer: true`` reads what ``source:
        KubernetesMetrics`` reads."""
        state = snapshot(*_three_pods_each("a", "b", "c"), kubernetes_metrics=_metrics())
        plan = run_cycle(
            policy((LNU, {**CPU_ONLY, "metricsUtilization": args}), **METRICS_PROVIDER), state
        )
        assert _evicted(plan) == ["a-0", "a-1"]


def _load_errors(args: dict[str, Any], plugin: str = LNU, **top: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        policy((plugin, args), **top)
    return [str(error) for error in caught.value.errors]


HERE = "profiles[0].pluginConfig[1].args"


@pytest.mark.parametrize(
    ("args", "top", "expected"),
    [
        pytest.param(
            UPSTREAM_PROMETHEUS,
            {},
            [
                f"{HERE}.metricsUtilization.source: LowNodeUtilization: needs metricsProviders "
                "[{source: Prometheus, prometheus: {url: …}}] at the top level; upstream fails "
                'every cycle with "prometheus client not initialized"'
            ],
            id="prometheus-without-its-provider",
        ),
        pytest.param(
            {**CPU_ONLY, "metricsUtilization": {"metricsServer": True}},
            {},
            [
                f"{HERE}.metricsUtilization.metricsServer: LowNodeUtilization: needs "
                "metricsProviders [{source: KubernetesMetrics}] (or the deprecated "
                "metricsCollector.enabled) at the top level; upstream fails every cycle with "
                '"metrics client not initialized"'
            ],
            id="metrics-server-without-its-provider",
        ),
        pytest.param(
            {**UPSTREAM_PROMETHEUS, "thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}},
            PROMETHEUS_PROVIDER,
            [
                f"{HERE}.thresholds: thresholds are expected to specify a single instance of "
                '"MetricResource" resource, got [cpu] instead',
                f"{HERE}.targetThresholds: targetThresholds are expected to specify a single "
                'instance of "MetricResource" resource, got [cpu] instead',
            ],
            id="prometheus-thresholds-not-metric-resource",
        ),
        pytest.param(
            {
                **CPU_ONLY,
                "metricsUtilization": {"source": "KubernetesMetrics", "metricsServer": True},
            },
            METRICS_PROVIDER,
            [
                f"{HERE}.metricsUtilization: it is not allowed to set both "
                '"KubernetesMetrics" source and metricsServer'
            ],
            id="both-kubernetes-metrics-and-metrics-server",
        ),
        pytest.param(
            {**UPSTREAM_PROMETHEUS, "metricsUtilization": {"source": "Prometheus"}},
            PROMETHEUS_PROVIDER,
            [
                f"{HERE}.metricsUtilization.prometheus.query: prometheus query is required when "
                'metrics source is set to "Prometheus"'
            ],
            id="prometheus-without-query",
        ),
        pytest.param(
            {**CPU_ONLY, "metricsUtilization": {}},
            {},
            [
                f"{HERE}.metricsUtilization.source: metrics source is empty: set source "
                "(KubernetesMetrics, Prometheus or NodeReports) or metricsServer, or leave "
                "metricsUtilization out to balance on requests (upstream fails every cycle "
                "with this)"
            ],
            id="metrics-source-empty",
        ),
        pytest.param(
            {
                "thresholds": {"ephemeral-storage": 20},
                "targetThresholds": {"ephemeral-storage": 50},
                "metricsUtilization": {"source": "KubernetesMetrics"},
            },
            METRICS_PROVIDER,
            [
                f"{HERE}.thresholds.ephemeral-storage: metrics.k8s.io reports cpu and memory "
                "only (and pods are counted), not ephemeral-storage",
                f"{HERE}.targetThresholds.ephemeral-storage: metrics.k8s.io reports cpu and "
                "memory only (and pods are counted), not ephemeral-storage",
            ],
            id="kubernetes-metrics-cannot-serve-the-resource",
        ),
        pytest.param(
            {"thresholds": {"MetricResource": 20}, "targetThresholds": {"MetricResource": 50}},
            {},
            [
                f"{HERE}.thresholds.MetricResource: read from a Prometheus query only "
                "(metricsUtilization.source: Prometheus)",
                f"{HERE}.targetThresholds.MetricResource: read from a Prometheus query only "
                "(metricsUtilization.source: Prometheus)",
            ],
            id="metric-resource-on-requests",
        ),
        pytest.param(
            {
                **UPSTREAM_PROMETHEUS,
                "metricsUtilization": {
                    **UPSTREAM_PROMETHEUS["metricsUtilization"],
                    "podUsage": "NodeReports",
                },
            },
            PROMETHEUS_PROVIDER,
            [
                f"{HERE}.metricsUtilization.podUsage: only with source Prometheus and "
                "prometheus.queries: a pod's usage is subtracted in the queries' resources"
            ],
            id="pod-usage-without-queries",
        ),
        pytest.param(
            {
                "thresholds": {"cpu": 20, "memory": 20, "pods": 20},
                "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50},
                "metricsUtilization": {
                    "source": "Prometheus",
                    "prometheus": {"queries": {"cpu": QUERY, "pods": "count"}},
                },
            },
            PROMETHEUS_PROVIDER,
            [f"{HERE}.metricsUtilization.prometheus.queries.pods: pods are counted, never queried"],
            id="queries-for-pods",
        ),
        pytest.param(
            {
                "thresholds": {"cpu": 20, "memory": 20},
                "targetThresholds": {"cpu": 50, "memory": 50},
                "metricsUtilization": {
                    "source": "Prometheus",
                    "prometheus": {"queries": {"cpu": QUERY}},
                },
            },
            PROMETHEUS_PROVIDER,
            [
                f"{HERE}.thresholds.memory: no prometheus.queries entry for memory",
                f"{HERE}.targetThresholds.memory: no prometheus.queries entry for memory",
            ],
            id="queries-missing-a-threshold-resource",
        ),
    ],
)
def test_a_source_that_cannot_be_served_is_refused_at_load(
    args: dict[str, Any], top: dict[str, Any], expected: list[str]
) -> None:
    """Each metricsUtilization the policy cannot serve is refused when the policy loads,
    with its path and upstream's words where upstream has them (upstream accepts most of
    these and then fails every cycle)."""
    assert _load_errors(args, **top) == expected


def test_the_policy_lists_what_the_runtime_must_read() -> None:
    """The enabled plugins' queries (each once) and whether metrics.k8s.io is read."""
    loaded = policy(
        (LNU, UPSTREAM_PROMETHEUS),
        (HNU, {"thresholds": {"cpu": 20}, "metricsUtilization": {"metricsServer": True}}),
        **PROMETHEUS_PROVIDER,
        metricsCollector={"enabled": True},
    )
    assert loaded.prometheus_queries == (QUERY,)
    assert loaded.reads_kubernetes_metrics
    assert loaded.prometheus is not None
    assert loaded.prometheus.url == "http://prometheus:9090"


def test_high_node_utilization_cannot_only_evict_requesters_of_a_metric() -> None:
    """``OnlyThresholdingResources`` on ``MetricResource`` would evict nothing (no pod
    requests it): refused at load rather than a plugin that silently never acts."""
    args = {
        "thresholds": {"MetricResource": 20},
        "evictionModes": ["OnlyThresholdingResources"],
        "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": QUERY}},
    }
    assert _load_errors(args, HNU, **PROMETHEUS_PROVIDER) == [
        f"{HERE}.evictionModes: OnlyThresholdingResources would evict nothing: no pod "
        "requests MetricResource"
    ]
