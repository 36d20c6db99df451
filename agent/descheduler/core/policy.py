"""The ``descheduler/v1alpha2`` ``DeschedulerPolicy``, read as upstream reads it.

An operator points us at the policy file they already run, unchanged. Every problem is
reported at once, each with its path (``profiles[0].pluginConfig[1].args.thresholds.cpu``),
and ``parse_policy`` raises ``ConfigError`` (the CLI's exit 2) instead of stopping at the
first, as upstream aggregates its ``errorsInPolicy``. Checked, as upstream does: an unknown plugin
(in ``pluginConfig`` or any ``plugins`` list); a plugin enabled at an extension point it does
not implement; each plugin's args (its ``validate()``); metrics providers configured twice,
a Prometheus provider without a URL, or an authToken without both secret names; the metrics
providers' messages are upstream's. Reading the file is not done here (the planner does no
I/O): ``agent.descheduler.policyfile`` reads it with the config files' YAML reader and hands
the document to ``parse_policy``.

Where we differ on purpose: unknown fields are errors (upstream's strict decoding drops some
silently), and an upstream plugin we do not implement yet is named as such. A Prometheus URL
must be ``http(s)`` with a host (Go's ``url.Parse`` takes almost anything, and the query
then fails every cycle). An enabled plugin whose ``metricsUtilization`` reads a source the
top level does not set up (Prometheus without its provider, metrics.k8s.io without its
provider or ``metricsCollector``) is refused here, where upstream loads it and fails every
cycle ("prometheus client not initialized", "metrics client not initialized").
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from agent.config.errors import ConfigError, FieldError
from agent.config.schema import load, setting
from agent.config.yamlfile import shape_problem
from agent.descheduler.core.framework.profile import DEFAULT_EVICTOR, Profile, resolve_enabled
from agent.descheduler.core.framework.registry import REGISTRY, reads_pod_status, unknown_reason
from agent.descheduler.core.framework.types import BALANCE, EXTENSION_POINTS, PRE_EVICTION_FILTER
from agent.descheduler.core.plugins.criticaladdonrescue import NAME as RESCUE
from agent.descheduler.core.plugins.criticaladdonrescue import CriticalAddonRescueArgs
from agent.kubesemantics.labelselector import SelectorError, parse_selector

A = TypeVar("A")
API_VERSION = "descheduler/v1alpha2"
KIND = "DeschedulerPolicy"
KUBERNETES_METRICS = "KubernetesMetrics"
PROMETHEUS = "Prometheus"


@dataclass(frozen=True)
class PluginSet:
    enabled: tuple[str, ...] = setting(factory=tuple)
    disabled: tuple[str, ...] = setting(factory=tuple)


@dataclass(frozen=True)
class PluginsDocument:
    presort: PluginSet = setting(factory=PluginSet)
    sort: PluginSet = setting(factory=PluginSet)
    deschedule: PluginSet = setting(factory=PluginSet)
    balance: PluginSet = setting(factory=PluginSet)
    filter: PluginSet = setting(factory=PluginSet)
    preevictionfilter: PluginSet = setting(factory=PluginSet)

    def at(self, point: str) -> PluginSet:
        attribute = "preevictionfilter" if point == PRE_EVICTION_FILTER else point
        value: PluginSet = getattr(self, attribute)
        return value


def _yaml_point(point: str) -> str:
    return "preevictionfilter" if point == PRE_EVICTION_FILTER else point


@dataclass(frozen=True)
class PluginConfigDocument:
    name: str = setting("")
    args: Any = setting(None)


@dataclass(frozen=True)
class ProfileDocument:
    name: str = setting("")
    plugin_config: tuple[PluginConfigDocument, ...] = setting(factory=tuple)
    plugins: PluginsDocument = setting(factory=PluginsDocument)

    def validate(self) -> list[FieldError]:
        return [] if self.name else [FieldError("name", "must not be empty")]


@dataclass(frozen=True)
class SecretReference:
    namespace: str = setting("")
    name: str = setting("")


@dataclass(frozen=True)
class AuthToken:
    secret_reference: SecretReference | None = setting(None)


@dataclass(frozen=True)
class Prometheus:
    url: str = setting("", key="url")
    auth_token: AuthToken | None = setting(None)


@dataclass(frozen=True)
class MetricsProvider:
    source: Literal["KubernetesMetrics", "Prometheus"] = setting("KubernetesMetrics")
    prometheus: Prometheus | None = setting(None)

    def validate(self) -> list[FieldError]:
        """Upstream's checks of a Prometheus provider, in upstream's words."""
        if self.source != PROMETHEUS:
            return []
        if self.prometheus is None:
            return [
                FieldError(
                    "prometheus",
                    "prometheus configuration is required when prometheus source is enabled",
                )
            ]
        errors = []
        if not self.prometheus.url:
            errors.append(
                FieldError(
                    "prometheus.url", "prometheus URL is required when prometheus is enabled"
                )
            )
        elif problem := url_problem(self.prometheus.url):
            errors.append(FieldError("prometheus.url", f"error parsing prometheus URL: {problem}"))
        token = self.prometheus.auth_token
        if token is not None:
            secret = token.secret_reference
            if secret is None:
                errors.append(
                    FieldError(
                        "prometheus.authToken.secretReference",
                        "prometheus authToken secret is expected to be set when authToken field is",
                    )
                )
            elif not secret.name or not secret.namespace:
                errors.append(
                    FieldError(
                        "prometheus.authToken.secretReference",
                        "prometheus authToken secret reference does not set both namespace "
                        "and name",
                    )
                )
        return errors


def url_problem(url: str) -> str:
    """Why ``url`` is no Prometheus address (an ``http``/``https`` URL with a host); "" if
    it is one. Stricter than Go's ``url.Parse``, which takes almost anything and leaves the
    failure to the first query, every cycle."""
    try:
        parsed = urlsplit(url)
        parsed.port  # noqa: B018 - raises on a bad port
    except ValueError as error:
        return str(error)
    if parsed.scheme not in ("http", "https"):
        return f"{url!r}: the scheme must be http or https"
    if not parsed.hostname:
        return f"{url!r}: no host"
    return ""


@dataclass(frozen=True)
class MetricsCollector:
    enabled: bool = setting(False)


@dataclass(frozen=True)
class PolicyDocument:
    """The file as written; ``DeschedulerPolicy`` is what a cycle runs."""

    api_version: Literal["descheduler/v1alpha2"] = setting(API_VERSION)
    kind: Literal["DeschedulerPolicy"] = setting(KIND)
    profiles: tuple[ProfileDocument, ...] = setting(factory=tuple)
    node_selector: str = setting("")
    max_no_of_pods_to_evict_per_node: int | None = setting(None, minimum=0)
    max_no_of_pods_to_evict_per_namespace: int | None = setting(None, minimum=0)
    max_no_of_pods_to_evict_total: int | None = setting(None, minimum=0)
    eviction_failure_event_notification: bool = setting(False)
    grace_period_seconds: int | None = setting(None, minimum=0)
    metrics_providers: tuple[MetricsProvider, ...] = setting(factory=tuple)
    metrics_collector: MetricsCollector | None = setting(None)

    def cross_field_errors(self) -> list[FieldError]:
        """Rules across fields, run even when some field is bad (each judges only parsed,
        non-default values), so they are reported in the same pass."""
        errors: list[FieldError] = []
        if self.node_selector:
            try:
                parse_selector(self.node_selector)
            except SelectorError as error:
                errors.append(FieldError("nodeSelector", str(error)))
        sources = [provider.source for provider in self.metrics_providers]
        errors += [
            FieldError(
                f"metricsProviders[{i}].source",
                f'metric provider "{source}" is already configured, each source can be '
                "configured only once",
            )
            for i, source in enumerate(sources)
            if source in sources[:i]
        ]
        if (
            KUBERNETES_METRICS in sources
            and self.metrics_collector
            and self.metrics_collector.enabled
        ):
            errors.append(
                FieldError(
                    "metricsCollector",
                    "it is not allowed to combine metrics provider when metrics collector is "
                    "enabled",
                )
            )
        names = [profile.name for profile in self.profiles]
        errors += [
            FieldError(f"profiles[{i}].name", f"duplicate profile name {name!r}")
            for i, name in enumerate(names)
            if name and name in names[:i]
        ]
        return errors

    def served_sources(self) -> set[str]:
        """The metrics sources the top level sets up (``metricsProviders``, and the
        deprecated ``metricsCollector.enabled`` for KubernetesMetrics), as upstream builds
        its clients from them."""
        sources: set[str] = {provider.source for provider in self.metrics_providers}
        if self.metrics_collector is not None and self.metrics_collector.enabled:
            sources.add(KUBERNETES_METRICS)
        return sources


_UNSERVED = {
    KUBERNETES_METRICS: (
        "needs metricsProviders [{source: KubernetesMetrics}] (or the deprecated "
        'metricsCollector.enabled) at the top level; upstream fails every cycle with "metrics '
        'client not initialized"'
    ),
    PROMETHEUS: (
        "needs metricsProviders [{source: Prometheus, prometheus: {url: …}}] at the top "
        'level; upstream fails every cycle with "prometheus client not initialized"'
    ),
}


def _unserved_sources(
    here: str,
    document: ProfileDocument,
    resolved: Mapping[str, tuple[str, ...]],
    args: Mapping[str, Any],
    served: set[str],
) -> list[FieldError]:
    """Each enabled plugin whose ``metricsUtilization`` names a source the policy does not
    set up: refused here, where upstream accepts it and then fails every cycle."""
    enabled = {name for names in resolved.values() for name in names}
    errors = []
    for i, config in enumerate(document.plugin_config):
        if config.name not in enabled:
            continue
        metrics = getattr(args.get(config.name), "metrics_utilization", None)
        kind = getattr(metrics, "kind", "")
        if kind not in _UNSERVED or kind in served:
            continue
        where = "metricsServer" if getattr(metrics, "metrics_server", False) else "source"
        path = f"{here}.pluginConfig[{i}].args.metricsUtilization.{where}"
        errors.append(FieldError(path, f"{config.name}: {_UNSERVED[kind]}"))
    return errors


@dataclass(frozen=True)
class DeschedulerPolicy:
    profiles: tuple[Profile, ...] = ()
    node_selector: str = ""
    max_no_of_pods_to_evict_per_node: int | None = None
    max_no_of_pods_to_evict_per_namespace: int | None = None
    max_no_of_pods_to_evict_total: int | None = None
    eviction_failure_event_notification: bool = False
    grace_period_seconds: int | None = None
    metrics_providers: tuple[MetricsProvider, ...] = ()
    priority_class_refs: tuple[tuple[str, str], ...] = ()
    """``(path, name)`` of every ``priorityThreshold.name`` in the file, for the check
    against the cluster's PriorityClasses (``unknown_priority_classes``)."""

    def unknown_priority_classes(self, known: Collection[str]) -> list[FieldError]:
        """Each ``priorityThreshold.name`` that no PriorityClass of ``known`` has.

        Upstream fails such a plugin when it is built, each cycle; a plan on a snapshot
        knows the cluster's classes, so it is a policy error there (exit 2)."""
        return [
            FieldError(path, f"no PriorityClass {name!r} in the cluster")
            for path, name in self.priority_class_refs
            if name not in known
        ]

    @property
    def reads_pod_status(self) -> bool:
        """Some enabled plugin reads the pod-state details (restarts, container states,
        conditions); without one, the pod cache leaves them out."""
        return reads_pod_status(profile.enabled for profile in self.profiles)

    def enabled_args(self, name: str, kind: type[A]) -> A | None:
        """The args of the first profile that enables the Balance plugin ``name``, if any."""
        for profile in self.profiles:
            args = profile.args.get(name)
            if name in profile.plugins_at(BALANCE) and isinstance(args, kind):
                return args
        return None

    def _metrics_in_use(self) -> list[Any]:
        """Every enabled Balance plugin's ``metricsUtilization``."""
        found = []
        for profile in self.profiles:
            for name in profile.plugins_at(BALANCE):
                metrics = getattr(profile.args.get(name), "metrics_utilization", None)
                if metrics is not None:
                    found.append(metrics)
        return found

    @property
    def prometheus_queries(self) -> tuple[str, ...]:
        """The distinct Prometheus queries the enabled plugins read, in the file's order: the
        runtime runs each once before a cycle."""
        queries: dict[str, None] = {}
        for metrics in self._metrics_in_use():
            queries.update(dict.fromkeys(metrics.queries().values()))
        return tuple(queries)

    @property
    def reads_kubernetes_metrics(self) -> bool:
        """Some enabled plugin reads metrics.k8s.io (``metricsServer``/``KubernetesMetrics``)."""
        return any(m.kind == KUBERNETES_METRICS for m in self._metrics_in_use())

    @property
    def prometheus(self) -> Prometheus | None:
        """The Prometheus provider's settings (``metricsProviders``), if the policy has one."""
        for provider in self.metrics_providers:
            if provider.source == PROMETHEUS:
                return provider.prometheus
        return None

    @property
    def uses_cooldown(self) -> bool:
        """Some plugin sets ``cooldownSeconds``: the churn guard is on, and needs a memory."""
        return any(
            getattr(args, "cooldown_seconds", 0) > 0
            for profile in self.profiles
            for args in profile.args.values()
        )

    @property
    def rescue_taint_timeout(self) -> float:
        """The longest ``taintTimeoutSeconds`` of any CriticalAddonRescue in the policy (its
        default without one): how long a rescue taint may stay."""
        timeouts = [
            args.taint_timeout_seconds
            for profile in self.profiles
            for name, args in profile.args.items()
            if name == RESCUE and isinstance(args, CriticalAddonRescueArgs)
        ]
        return max(timeouts, default=CriticalAddonRescueArgs().taint_timeout_seconds)


def _default_enabled_args(
    here: str,
    resolved: Mapping[str, tuple[str, ...]],
    args: dict[str, Any],
    errors: list[FieldError],
) -> None:
    """Upstream cannot build an enabled plugin without its pluginConfig; we take its default
    args, unless they are not valid on their own (a required arg), which is an error."""
    for point, names in resolved.items():
        for name in names:
            if name in args or point not in REGISTRY[name].extension_points:
                continue  # configured, or already reported as at the wrong extension point
            args[name], default_errors = load(REGISTRY[name].args_type, None)
            errors.extend(
                FieldError(
                    f"{here}.pluginConfig",
                    f"{name} is enabled without args, and its defaults are not valid: "
                    f"{e.path + ': ' if e.path else ''}{e.reason}",
                )
                for e in default_errors
            )


def _resolve_profile(
    index: int,
    document: ProfileDocument,
    errors: list[FieldError],
    priority_refs: list[tuple[str, str]],
    served: set[str],
) -> Profile:
    here = f"profiles[{index}]"
    args: dict[str, Any] = {}
    for i, config in enumerate(document.plugin_config):
        path = f"{here}.pluginConfig[{i}]"
        spec = REGISTRY.get(config.name)
        if spec is None:
            errors.append(FieldError(f"{path}.name", unknown_reason(config.name)))
            continue
        if config.name in args:
            errors.append(FieldError(f"{path}.name", f"plugin {config.name!r} configured twice"))
            continue
        value, arg_errors = load(spec.args_type, config.args)
        errors.extend(
            FieldError(f"{path}.args.{e.path}" if e.path else f"{path}.args", e.reason)
            for e in arg_errors
        )
        args[config.name] = value
        threshold = getattr(value, "priority_threshold", None)
        if threshold is not None and threshold.name:
            priority_refs.append((f"{path}.args.priorityThreshold.name", threshold.name))
    enabled: dict[str, tuple[str, ...]] = {}
    disabled: dict[str, tuple[str, ...]] = {}
    for point in EXTENSION_POINTS:
        plugin_set = document.plugins.at(point)
        for kind, names in (("enabled", plugin_set.enabled), ("disabled", plugin_set.disabled)):
            for i, name in enumerate(names):
                path = f"{here}.plugins.{_yaml_point(point)}.{kind}[{i}]"
                spec = REGISTRY.get(name)
                if spec is None:
                    errors.append(FieldError(path, unknown_reason(name)))
                elif point not in spec.extension_points:
                    errors.append(
                        FieldError(
                            path, f"plugin {name!r} does not implement the {point} extension point"
                        )
                    )
        enabled[point] = tuple(n for n in plugin_set.enabled if n in REGISTRY)
        disabled[point] = plugin_set.disabled
    resolved = resolve_enabled(enabled, disabled)
    errors += _unserved_sources(here, document, resolved, args, served)
    _default_enabled_args(here, resolved, args, errors)
    for names in resolved.values():
        for name in names:
            if name not in args:
                args[name] = load(REGISTRY[name].args_type, None)[0]
    args.setdefault(DEFAULT_EVICTOR, load(REGISTRY[DEFAULT_EVICTOR].args_type, None)[0])
    return Profile(name=document.name, enabled=resolved, args=args)


def parse_policy(raw: Any, source: str) -> DeschedulerPolicy:
    """Validate a parsed YAML document; raise ``ConfigError`` with every problem."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(source, [FieldError("", "the document must be a mapping")])
    if problem := shape_problem(raw):
        raise ConfigError(source, [FieldError("", problem)])
    document, errors = load(PolicyDocument, raw)
    errors += document.cross_field_errors()
    priority_refs: list[tuple[str, str]] = []
    served = document.served_sources()
    profiles = tuple(
        _resolve_profile(i, p, errors, priority_refs, served)
        for i, p in enumerate(document.profiles)
    )
    if errors:
        raise ConfigError(source, errors)
    return DeschedulerPolicy(
        profiles=profiles,
        node_selector=document.node_selector,
        max_no_of_pods_to_evict_per_node=document.max_no_of_pods_to_evict_per_node,
        max_no_of_pods_to_evict_per_namespace=document.max_no_of_pods_to_evict_per_namespace,
        max_no_of_pods_to_evict_total=document.max_no_of_pods_to_evict_total,
        eviction_failure_event_notification=document.eviction_failure_event_notification,
        grace_period_seconds=document.grace_period_seconds,
        metrics_providers=document.metrics_providers,
        priority_class_refs=tuple(priority_refs),
    )
