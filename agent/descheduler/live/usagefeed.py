"""What a cycle's utilization plugins read from a metrics source, read just before it.

The plugins are pure and never call anything (``core``), so the sources their policy names
are read here, once per cycle, and travel in the snapshot (``model.metricsusage``):

- each distinct Prometheus query of the enabled plugins, evaluated now, as upstream runs it
  at the start of each plugin's ``Balance``;
- metrics.k8s.io: the collector's smoothed node figures (``metricscollector``) and one list
  of PodMetrics for the pods' own usage (upstream Gets each candidate pod's; a list answers
  them all at once).

A read that fails travels as its reason: the plugins that need it fail with it, so the
cycle's outcome is ``failed``, with a Warning Event and, for a one-shot run, exit 1. It is
counted here in ``…_usage_source_errors_total{source}`` and logged.

The Prometheus bearer token is asked of its source at every query: the file given on the
command line (or the service-account token in a pod), or the Secret the policy names
(``authToken.secretReference``, key ``prometheusAuthToken`` as upstream), read fresh each
time so a rotated token is used from the next cycle on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

import structlog
from prometheus_client import Counter

from agent.descheduler.cache.metricsserver import pod_usage
from agent.descheduler.cache.prometheussamples import samples_from
from agent.descheduler.core.policy import DeschedulerPolicy, Prometheus
from agent.descheduler.live.metricscollector import SOURCE as KUBERNETES_METRICS
from agent.descheduler.live.metricscollector import MetricsCollector
from agent.descheduler.model.metricsusage import KubernetesMetrics, PrometheusSamples
from agent.descheduler.options import DeschedulerOptions
from agent.kube.api import KubeApi
from agent.kube.errors import KubeError
from agent.kube.metricsapi import MetricsApi
from agent.kube.secrets import secret_value
from agent.prometheus.client import PrometheusClient, PrometheusSettings, TokenSource, no_token
from agent.prometheus.errors import PrometheusError, TokenUnavailable

PROMETHEUS = "Prometheus"
TOKEN_KEY = "prometheusAuthToken"  # noqa: S105 - a data key's name, not a secret
"""The Secret's data key upstream reads the token from."""

_log = structlog.get_logger(subsystem="descheduler.metrics")


def file_token(path: str) -> TokenSource:
    """The token in ``path``, read at every query (a projected token is rotated in place)."""

    def read() -> str:
        try:
            return Path(path).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise TokenUnavailable(f"the token file {path} cannot be read: {error}") from error

    return read


def secret_token(api: KubeApi, namespace: str, name: str) -> TokenSource:
    """The token in the Secret ``namespace/name``, read fresh at every query."""

    def read() -> str:
        try:
            token = secret_value(api, namespace, name, TOKEN_KEY)
        except KubeError as error:
            raise TokenUnavailable(f"unable to get {namespace}/{name} secret: {error}") from error
        if not token:
            raise TokenUnavailable(
                f'prometheus authentication token secret missing "{TOKEN_KEY}" data or empty'
            )
        return token

    return read


def prometheus_client(
    provider: Prometheus, options: DeschedulerOptions, api: KubeApi
) -> PrometheusClient:
    """The client for the policy's provider, as the command line adjusts it: the URL flag
    wins over the policy's; a token file wins over the policy's Secret."""
    token: TokenSource = no_token
    secret = provider.auth_token.secret_reference if provider.auth_token else None
    if options.prometheus_token_file:
        token = file_token(options.prometheus_token_file)
    elif secret is not None:
        token = secret_token(api, secret.namespace, secret.name)
    return PrometheusClient(
        PrometheusSettings(
            url=options.prometheus_url or provider.url,
            token=token,
            ca_file=options.prometheus_ca_file,
            insecure_skip_tls_verify=options.prometheus_insecure_skip_tls_verify,
            timeout=options.prometheus_timeout,
        )
    )


class UsageFeed:
    """Reads, before each cycle, what the policy's utilization plugins will read."""

    def __init__(
        self,
        policy: DeschedulerPolicy,
        *,
        errors: Counter,
        prometheus: PrometheusClient | None = None,
        collector: MetricsCollector | None = None,
        metrics_api: MetricsApi | None = None,
    ) -> None:
        self.queries = policy.prometheus_queries
        self.errors = errors
        self.prometheus = prometheus
        self.collector = collector
        self.metrics_api = metrics_api

    async def ready(self, timeout: float) -> None:
        """Wait (bounded) for metrics.k8s.io's first sample, as upstream does before its
        first cycle; a sample that never comes fails that cycle's plugins, not the process."""
        if self.collector is None:
            return
        try:
            async with asyncio.timeout(timeout):
                await self.collector.first_attempt.wait()
        except TimeoutError:
            _log.warning("metrics.k8s.io: no first sample yet", waited=timeout)

    async def read(
        self, now: float
    ) -> tuple[Mapping[str, PrometheusSamples], KubernetesMetrics | None]:
        """Each query's samples (by query) and metrics.k8s.io's figures, for a cycle at
        ``now`` (Unix seconds)."""
        samples = {query: await self._query(query, now) for query in self.queries}
        return samples, await self._kubernetes_metrics()

    async def _query(self, query: str, now: float) -> PrometheusSamples:
        if self.prometheus is None:  # pragma: no cover - the app builds one for any query
            return PrometheusSamples(query, error="prometheus client not initialized")
        try:
            answer = await asyncio.to_thread(self.prometheus.query, query, now)
        except PrometheusError as error:
            samples = samples_from(query, error)
        else:
            for warning in answer.warnings:
                _log.info("prometheus warning", query=query, warning=warning)
            samples = samples_from(query, answer)
        if samples.error:
            self.errors.labels(PROMETHEUS).inc()
            _log.warning("prometheus query gave no usage", query=query, problem=samples.error)
        return samples

    async def _kubernetes_metrics(self) -> KubernetesMetrics | None:
        collector, api = self.collector, self.metrics_api
        if collector is None or api is None:
            return None
        if collector.served is False:
            return KubernetesMetrics(served=False)
        if collector.served is None:
            return KubernetesMetrics(error="metrics.k8s.io: discovery has not answered yet")
        pods_error = ""
        try:
            read = pod_usage(await asyncio.to_thread(api.pod_metrics))
        except KubeError as error:
            self.errors.labels(KUBERNETES_METRICS).inc()
            pods_error = f"PodMetrics not read: {error}"
            _log.warning("metrics.k8s.io", problem=pods_error)
            read = pod_usage([])
        return KubernetesMetrics(
            nodes=collector.smoother.nodes,
            pods=read.usage,
            pod_problems=read.problems,
            error=collector.error,
            pods_error=pods_error,
        )
