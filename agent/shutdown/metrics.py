"""The shutdown capability's metrics, registered into the process's one registry.

The two time gauges mirror kubelet's ``kubelet_graceful_shutdown_{start,end}_time_seconds``
(loaded from the state file at start, so they survive the reboot they describe), with
help texts that say which is which: kubelet gives both the same text by mistake.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from agent.shutdown.record import PhaseRecord, ShutdownRecord


class ShutdownMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.start_time = Gauge(
            "kubelet_companion_graceful_shutdown_start_time_seconds",
            "Unix time in seconds at which the last graceful node shutdown started "
            "(logind's PrepareForShutdown). 0 if none was recorded.",
            registry=registry,
        )
        self.end_time = Gauge(
            "kubelet_companion_graceful_shutdown_end_time_seconds",
            "Unix time in seconds at which the last graceful node shutdown ended and the "
            "inhibitor lock was released. 0 while none has ended.",
            registry=registry,
        )
        self.phase_duration = Gauge(
            "kubelet_companion_shutdown_phase_duration_seconds",
            "How long each priority phase of the last graceful node shutdown took, "
            "by the priority of its bucket.",
            ["priority"],
            registry=registry,
        )
        self.pods_terminated = Counter(
            "kubelet_companion_shutdown_pods_terminated",
            "Pods handled by graceful node shutdown, by the priority of the pod's own bucket "
            "(also when it arrived late and a later phase stopped it) and result "
            "(gone: left the API before the phase deadline; timed-out: still there at the "
            "deadline; blocked: a PodDisruptionBudget held its eviction to the deadline; "
            "failed: no delete or eviction request got through).",
            ["priority", "result"],
            registry=registry,
        )
        self.late_arrivals = Counter(
            "kubelet_companion_shutdown_pods_arrived_late",
            "Pods found on the node during a graceful shutdown that were not there when it "
            "started (bound meanwhile: before the scheduler saw the shutting-down taint, or "
            "tolerating it), by the priority of the pod's own bucket.",
            ["priority"],
            registry=registry,
        )
        self.taint_wait = Gauge(
            "kubelet_companion_shutdown_taint_wait_seconds",
            "How long the first pod deletion of the last graceful shutdown waited for the "
            "shutting-down taint to be stored on the Node.",
            registry=registry,
        )
        self.untainted_starts = Counter(
            "kubelet_companion_shutdown_started_untainted",
            "Graceful shutdowns whose first pod deletion went out before the API server had "
            "stored the shutting-down taint (it was slow or refused; the taint was still "
            "retried in the background).",
            registry=registry,
        )
        self.lock_held = Gauge(
            "kubelet_companion_inhibitor_lock_held",
            "1 while the agent holds its logind shutdown delay lock, else 0.",
            registry=registry,
        )
        self.budget = Gauge(
            "kubelet_companion_shutdown_budget_seconds",
            "The graceful shutdown budget (the sum of the priority buckets) this agent holds "
            "logind's delay lock for; 0 when graceful shutdown is off (and no lock is taken).",
            registry=registry,
        )
        self.inhibit_delay_max = Gauge(
            "kubelet_companion_logind_inhibit_delay_max_seconds",
            "logind's InhibitDelayMaxSec as last read over D-Bus, in seconds.",
            registry=registry,
        )
        self.inhibit_delay_too_short = Gauge(
            "kubelet_companion_logind_inhibit_delay_too_short",
            "1 when logind's InhibitDelayMaxSec is below the shutdown budget (the override "
            "did not take effect), so logind will not wait for the whole shutdown.",
            registry=registry,
        )
        self.dropin_overridden = Gauge(
            "kubelet_companion_logind_dropin_overridden",
            "How many logind drop-ins decide InhibitDelayMaxSec instead of ours (they sort "
            "after it, or hide it under the same name); 0 when ours has the last word.",
            registry=registry,
        )

    def load(self, record: ShutdownRecord | None) -> None:
        """Show the last recorded shutdown (called at start and after every change)."""
        if record is None:
            return
        self.start_time.set(record.start_time)
        self.end_time.set(record.end_time or 0)
        for phase in record.phases:
            self.show_phase(phase)

    def show_phase(self, phase: PhaseRecord) -> None:
        """A phase's duration, once it has one, under the priority of its bucket."""
        if (duration := phase.duration) is not None:
            self.phase_duration.labels(priority=str(phase.priority)).set(duration)

    def pod_result(self, bucket: int, result: str) -> None:
        """One pod's result, under the priority of its own bucket."""
        self.pods_terminated.labels(priority=str(bucket), result=result).inc()

    def late_pod(self, bucket: int) -> None:
        """A pod arrived on the node during a shutdown (counted under its own bucket)."""
        self.late_arrivals.labels(priority=str(bucket)).inc()
