"""One soak scenario: real logind, a fresh fake API server, the real agent process, faults.

``run_scenario`` builds everything fresh (a private bus with its own logind, an API server
with its fake kubelet, a state directory), starts the agent, waits until logind lists its
lock, and then plays the plan's timeline from that moment: the critical pod turning Ready,
the PowerOff, the faults, pods added mid-shutdown, a second PowerOff after a cancellation.
The observers (``observe.py``) watch throughout; ``invariants.py`` judges what they saw.

Timeline actions run one at a time on this thread, in time order; one that blocks (a
logind restart waits for logind to be back) delays the next, and every observation
records when things really happened, not when they were planned.
"""

from __future__ import annotations

import contextlib
import os
import queue
import random
import signal
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.shutdown.taint import SHUTTING_DOWN as SHUTTING_DOWN_TAINT
from tests.harness import kubeobjects
from tests.harness.fake_apiserver import FakeApiServer, FakeKubelet
from tests.harness.fake_apiserver.faults import FaultRule
from tests.harness.kubeobjects import controller_ref
from tests.harness.logind import LogindHarness
from tests.harness.readiness_objects import GATE, daemon_set
from tests.harness.readiness_objects import pod as critical_pod
from tests.soak.launch import AgentProcess, Launcher
from tests.soak.observe import (
    ForeignWriter,
    LockMonitor,
    NodeChecker,
    StateFileMonitor,
)
from tests.soak.plan import CRITICAL_PRIORITY, Fault, PodPlan, Scenario

NODE = "node-1"
SHUTTING_DOWN = SHUTTING_DOWN_TAINT.key
CRITICAL_DS = "cni"
CRITICAL_POD = "cni-node-1"
FIRST_LOCK_TIMEOUT = 30.0
"""How long a freshly started agent may take to hold its first lock (a loaded machine)."""


@dataclass
class Interval:
    kind: str
    start: float
    end: float


@dataclass
class Observations:
    """Everything a scenario saw, on ``time.monotonic()`` (one clock for every process)."""

    scenario: Scenario
    armed: float = 0.0
    ended: float = 0.0
    signals: list[tuple[bool, float]] = field(default_factory=list)
    logind_down: list[Interval] = field(default_factory=list)
    agent_down: list[Interval] = field(default_factory=list)
    api_faults: list[Interval] = field(default_factory=list)
    watch_breaks: list[float] = field(default_factory=list)
    """When the agent's watch streams were broken (cut, compacted, API unreachable)."""
    power_offs: list[float] = field(default_factory=list)
    lock_samples: list[tuple[float, tuple[int, ...]]] = field(default_factory=list)
    records: list[tuple[float, float | None, int]] = field(default_factory=list)
    """(start wall, start monotonic, budget) of every shutdown record the state file held."""
    torn_reads: list[str] = field(default_factory=list)
    state_reads: int = 0
    node_findings: list[tuple[str, float, str]] = field(default_factory=list)
    shutdown_taint: list[tuple[float, bool]] = field(default_factory=list)
    """(when, present) at every Node version where the shutting-down taint changed."""
    deletions: list[tuple[float, str]] = field(default_factory=list)
    """(when the API server received it, pod name) of every DELETE and eviction of a pod."""
    created: dict[str, float] = field(default_factory=dict)
    removed: dict[str, float] = field(default_factory=dict)
    ready_at: float | None = None
    lifted_at: float | None = None
    faults: dict[str, int] = field(default_factory=dict)
    foreign_writes: int = 0
    error: str | None = None
    workdir: str = ""


def priority_class(priority: int) -> str | None:
    if priority == 0:
        return None
    if priority == CRITICAL_PRIORITY:
        return "system-cluster-critical"
    return f"soak-prio-{priority}"


def pod_manifest(plan: PodPlan) -> dict[str, Any]:
    """The planned pod, Running on the soak's node."""
    return kubeobjects.pod(
        plan.name,
        NODE,
        priority_class=priority_class(plan.priority),
        grace_seconds=plan.grace,
        image="registry.example/app:1",
        phase="Running",
    )


def agent_config(scenario: Scenario, workdir: Path, kubeconfig: Path, dropin: Path) -> str:
    lines = [
        f"nodeName: {NODE}",
        f"kubeconfig: {kubeconfig}",
        f"stateDir: {workdir / 'state'}",
        "metricsBindAddress: 127.0.0.1:0",
        "logFormat: json",
        "shutdownGracePeriodByPodPriority:",
        *[f"  - {{priority: {p}, shutdownGracePeriodSeconds: {s}}}" for p, s in scenario.buckets],
        "shutdown:",
        f"  mode: {scenario.mode}",
        f"  logindDropInPath: {dropin}",
        f"  manageLogindDelay: {'false' if scenario.short_logind_delay else 'true'}",
        "  inhibitDelayMargin: 1s",
        "  dbusCallTimeout: 2s",
        "kube:",
        "  requestTimeout: 5s",
    ]
    return "\n".join(lines) + "\n"


class _Run:
    """The live state of one scenario run (the timeline's actions are its methods)."""

    def __init__(self, scenario: Scenario, launcher: Launcher, workdir: Path) -> None:
        self.scenario = scenario
        self.launcher = launcher
        self.workdir = workdir
        self.obs = Observations(scenario, workdir=str(workdir))
        self.rng = random.Random(f"{scenario.seed}:{scenario.index}:writer")  # noqa: S311
        self.harness = LogindHarness(
            # Its own directory under /tmp: a deep --workdir would make the bus socket's path
            # longer than a Unix socket allows.
            inhibit_delay_max_sec=1 if scenario.short_logind_delay else scenario.budget + 2,
        )
        self.server = FakeApiServer()
        self.kubelet: FakeKubelet | None = None
        self.agent: AgentProcess | None = None
        self.writer: ForeignWriter | None = None
        self.checker = NodeChecker(NODE, None, GATE)
        self.lock_monitor: LockMonitor | None = None
        self.state_monitor = StateFileMonitor(workdir / "state" / "shutdown-state.json")
        self.timeline: list[tuple[float, int, str, Callable[[], None]]] = []
        self._order = 0
        self._api_rules: dict[int, tuple[str, float, FaultRule]] = {}
        self.config = workdir / "agent.yaml"
        self.log = workdir / "agent.log"
        self.env: dict[str, str] = {}
        self.again_scheduled = False
        self._instant = {p.name for p in scenario.pods if p.behaviour == "instant"}
        self._finishing: queue.Queue[str | None] = queue.Queue()
        self._finisher = threading.Thread(target=self._finish_instant_pods, daemon=True)

    # -- set-up -------------------------------------------------------------------------

    def set_up(self) -> None:
        scenario = self.scenario
        (self.workdir / "state").mkdir(parents=True, exist_ok=True)
        self.harness.start()
        jobs = self.harness.systemd1
        if scenario.job_end == "cancel":
            jobs.configure_jobs(result="canceled", delay=scenario.cancel_delay)
        else:
            jobs.configure_jobs(emit_job_removed=False)
        server = self.server.start()
        self.kubelet = server.kubelet(NODE, time_scale=scenario.time_scale)
        server.patch("nodes", NODE, {"spec": {"taints": [{"key": GATE, "effect": "NoSchedule"}]}})
        for priority in sorted({p.priority for p in scenario.pods}):
            name = priority_class(priority)
            if name and not server.exists("priorityclasses", name):
                server.create(kubeobjects.priority_class(name, priority))
        ds = server.create(daemon_set(CRITICAL_DS))
        server.create(critical_pod(CRITICAL_POD, owner=controller_ref(ds), ready=False))
        for plan in scenario.pods:
            if plan.added_after_power_off is None:
                self.add_pod(plan)
        self.writer = ForeignWriter(server, NODE, self.rng)
        self.checker.writer = self.writer
        server.store.add_hook(self.checker.hook)
        server.store.add_hook(self._watch_shutdown_taint)
        server.store.add_hook(self._watch_instant_pods)
        self._finisher.start()
        kubeconfig = server.write_kubeconfig(self.workdir / "kubeconfig")
        dropin = self.harness.dropin_dir / "99-zz-kubelet-companion.conf"
        self.config.write_text(agent_config(scenario, self.workdir, kubeconfig, dropin))
        self.env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "DBUS_SYSTEM_BUS_ADDRESS": self.harness.bus_address,
            "KUBERNETES_SERVICE_HOST": "",
            "HOME": str(self.workdir),
        }
        self.lock_monitor = LockMonitor(self.harness).start()
        self.state_monitor.start()
        self.writer.start()

    def _watch_shutdown_taint(self, rt: Any, event: Any) -> None:
        if rt.key != "nodes" or event.type == "DELETED":
            return
        present = any(
            t.get("key") == SHUTTING_DOWN for t in (event.obj.get("spec") or {}).get("taints") or []
        )
        history = self.obs.shutdown_taint
        if not history or history[-1][1] != present:
            history.append((time.monotonic(), present))

    def _watch_instant_pods(self, rt: Any, event: Any) -> None:
        metadata = event.obj.get("metadata") or {}
        if rt.key == "pods" and event.type == "MODIFIED" and metadata.get("deletionTimestamp"):
            name = metadata.get("name")
            if metadata.get("namespace") == "default" and name in self._instant:
                self._finishing.put(name)

    def _finish_instant_pods(self) -> None:
        """Pods that end the moment they are told to: gone as soon as they are deleting."""
        while (name := self._finishing.get()) is not None:
            with contextlib.suppress(Exception):
                self.server.delete("pods", name, "default", grace_period_seconds=0)

    def add_pod(self, plan: PodPlan) -> None:
        self.server.create(pod_manifest(plan))
        self.obs.created[plan.name] = time.monotonic()
        if plan.behaviour == "stuck":
            assert self.kubelet is not None
            self.kubelet.stick("default", plan.name)

    def start_agent(self) -> None:
        self.agent = self.launcher.start(self.config, self.env, self.log)

    # -- the timeline -------------------------------------------------------------------

    def at(self, when: float, label: str, action: Callable[[], None]) -> None:
        self._order += 1
        self.timeline.append((when, self._order, label, action))
        self.timeline.sort(key=lambda entry: (entry[0], entry[1]))

    def plan_timeline(self) -> None:
        scenario, armed = self.scenario, self.obs.armed
        self.at(armed + scenario.ready_at, "ready", self.make_ready)
        flaps = scenario.flaps_after_ready
        for down, up in zip(flaps[::2], flaps[1::2], strict=True):
            self.at(armed + down, "flap-down", lambda: self.flap(ready=False))
            self.at(armed + up, "flap-up", lambda: self.flap(ready=True))
        power_off = armed + scenario.power_off_at
        self.at(power_off, "power-off", self.power_off)
        for plan in scenario.pods:
            if plan.added_after_power_off is not None:
                self.at(power_off + plan.added_after_power_off, "add-pod", self._adder(plan))
        for fault in scenario.faults:
            self.at(armed + fault.at, fault.kind, self._fault(fault))

    def _adder(self, plan: PodPlan) -> Callable[[], None]:
        return lambda: self.add_pod(plan)

    def make_ready(self) -> None:
        assert self.kubelet is not None
        truth = self.checker.truth
        truth.ready, truth.ready_at = True, time.monotonic()
        self.obs.ready_at = truth.ready_at
        self.kubelet.set_ready("kube-system", CRITICAL_POD)

    def flap(self, *, ready: bool) -> None:
        """After the gate was lifted only: bootstrap mode must never put it back."""
        assert self.kubelet is not None
        if self.checker.lifted_at is None:
            return
        self.kubelet.set_ready("kube-system", CRITICAL_POD, ready=ready)
        if not ready:
            self.count("readiness-flap")

    def power_off(self) -> None:
        self.obs.power_offs.append(time.monotonic())
        try:
            self.harness.power_off(timeout=5)
        except Exception as error:  # noqa: BLE001 - e.g. logind refusing while it is busy
            self.obs.power_offs.pop()
            self.note(f"PowerOff refused: {error!r}")

    def power_off_again(self) -> None:
        self.harness.systemd1.configure_jobs(emit_job_removed=False)
        self.power_off()

    def note(self, text: str) -> None:
        with self.log.open("a") as out:
            out.write(f"# soak {time.monotonic():.3f}: {text}\n")

    def count(self, kind: str) -> None:
        self.obs.faults[kind] = self.obs.faults.get(kind, 0) + 1

    def _fault(self, fault: Fault) -> Callable[[], None]:
        def inject() -> None:
            self.count(fault.kind)
            self.note(f"fault {fault}")
            self.inject(fault)

        return inject

    def inject(self, fault: Fault) -> None:
        server, now = self.server, time.monotonic()
        if fault.kind in ("logind-restart", "logind-restart-wiped"):
            start = time.monotonic()
            self.harness.restart_logind(keep_inhibit_state=fault.kind == "logind-restart")
            self.obs.logind_down.append(Interval(fault.kind, start, time.monotonic()))
        elif fault.kind == "agent-kill":
            if self.agent is None or not self.agent.alive():
                return
            self.agent.kill(signal.SIGKILL)
            self.state_monitor.check_now()
            killed = time.monotonic()
            self.agent = None

            def respawn() -> None:
                self.start_agent()
                self.obs.agent_down.append(Interval("agent-kill", killed, time.monotonic()))

            self.at(killed + fault.duration, "agent-restart", respawn)
        elif fault.kind == "watch-cut":
            self.obs.watch_breaks.append(now)
            server.cut_watches()
        elif fault.kind == "compaction-410":
            self.obs.watch_breaks.append(now)
            server.compact()
            server.cut_watches()
        else:
            faults = server.faults
            if fault.kind == "api-unreachable":
                rule = faults.drop_connections(None, None, times=None)
                self.obs.watch_breaks.append(now)
                server.cut_watches()
            elif fault.kind == "api-slow":
                rule = faults.hang(None, None, seconds=fault.hang, times=None)
            else:
                status = int(fault.kind.removeprefix("api-"))
                rule = faults.add(
                    None, None, status=status, times=None, retry_after=1 if status == 429 else None
                )
            key = id(rule)
            self._api_rules[key] = (fault.kind, now, rule)
            self.at(now + fault.duration, f"{fault.kind}-end", lambda: self._end_api(key, fault))

    def _end_api(self, key: int, fault: Fault) -> None:
        kind, start, rule = self._api_rules.pop(key)
        self.server.faults.remove(rule)
        # A request held by a hang that began just before the end is served ``hang`` later.
        self.obs.api_faults.append(Interval(kind, start, time.monotonic() + fault.hang))

    # -- running ------------------------------------------------------------------------

    def wait_armed(self) -> bool:
        assert self.lock_monitor is not None
        deadline = time.monotonic() + FIRST_LOCK_TIMEOUT
        while time.monotonic() < deadline:
            if self.lock_monitor.latest_pids():
                self.obs.armed = time.monotonic()
                return True
            if self.agent is not None and not self.agent.alive():
                return False
            time.sleep(0.02)
        return False

    def end_time(self) -> float:
        """When the scenario may stop: the last shutdown's budget and its aftermath are over."""
        scenario = self.scenario
        last_action = max((when for when, *_ in self.timeline), default=self.obs.armed)
        ends = [last_action + 0.5]
        if self.obs.power_offs:
            ends.append(self.obs.power_offs[-1] + scenario.budget + 0.8)
        if scenario.job_end == "cancel" and self.obs.power_offs and not self.cancelled():
            # The job ends after the release (by the budget's end) plus its delay; a logind
            # restart may have dropped the operation, so the wait is bounded.
            ends.append(self.obs.power_offs[0] + scenario.budget + scenario.cancel_delay + 0.5)
        if self.cancelled():
            ends.append(self.cancelled_at() + 2.0)
        if self.obs.agent_down:
            ends.append(self.obs.agent_down[-1].end + 1.5)
        return max(ends)

    def cancelled(self) -> bool:
        return any(not value for value, _ in self.harness.prepare_for_shutdown_signals())

    def cancelled_at(self) -> float:
        return max(t for value, t in self.harness.prepare_for_shutdown_signals() if not value)

    def play(self) -> None:
        while True:
            now = time.monotonic()
            if (
                self.scenario.power_off_again_after is not None
                and not self.again_scheduled
                and self.cancelled()
            ):
                self.again_scheduled = True
                self.at(
                    self.cancelled_at() + self.scenario.power_off_again_after,
                    "power-off-again",
                    self.power_off_again,
                )
            if self.timeline and self.timeline[0][0] <= now:
                _, _, _label, action = self.timeline.pop(0)
                action()
                continue
            if not self.timeline and now >= self.end_time():
                return
            time.sleep(0.01)

    def settle(self) -> None:
        """After a cancellation: give the undo time to show before the observers stop."""
        signals = self.harness.prepare_for_shutdown_signals()
        if not signals or signals[-1][0]:
            return  # no shutdown, or the last one is still on (the node stays down)
        deadline = time.monotonic() + 8.0
        assert self.lock_monitor is not None
        while time.monotonic() < deadline:
            pids = self.lock_monitor.latest_pids()
            taint = self.obs.shutdown_taint
            if pids is not None and len(pids) == 1 and (not taint or not taint[-1][1]):
                return
            time.sleep(0.05)

    # -- tear-down ----------------------------------------------------------------------

    def collect(self) -> None:
        obs = self.obs
        obs.ended = time.monotonic()
        obs.signals = self.harness.prepare_for_shutdown_signals()
        if self.lock_monitor is not None:
            obs.lock_samples = [(s.sent, s.pids) for s in self.lock_monitor.samples]
        obs.records = [
            (r.start_time, r.start_monotonic, r.budget) for r in self.state_monitor.records.values()
        ]
        obs.torn_reads = [f"{t.error} in {t.head!r}" for t in self.state_monitor.torn]
        obs.state_reads = self.state_monitor.reads
        obs.node_findings = [(f.invariant, f.at, f.detail) for f in self.checker.findings]
        obs.lifted_at = self.checker.lifted_at
        obs.foreign_writes = self.writer.writes if self.writer is not None else 0

        def is_pod_deletion(request: Any) -> bool:
            path = request.path
            if request.method == "DELETE":
                return "/namespaces/default/pods/" in path
            return request.method == "POST" and path.endswith("/eviction")

        for request in self.server.requests(predicate=is_pod_deletion):
            name = request.path.removesuffix("/eviction").rsplit("/", 1)[1]
            obs.deletions.append((request.monotonic, name))
        if self.kubelet is not None:
            obs.removed = {
                name: when for (ns, name), when in self.kubelet.removed().items() if ns == "default"
            }

    def tear_down(self) -> None:
        steps: list[Callable[[], None]] = [lambda: self._finishing.put(None)]
        if self.writer is not None:
            steps.append(self.writer.stop)
        if self.lock_monitor is not None:
            steps.append(self.lock_monitor.stop)
        steps.append(self.state_monitor.stop)
        if self.agent is not None:
            agent = self.agent
            steps.append(lambda: agent.kill(signal.SIGKILL))
        steps += [self.server.stop, self.harness.stop]
        for step in steps:
            with contextlib.suppress(Exception):
                step()


def run_scenario(
    scenario: Scenario, launcher: Launcher, *, base_dir: Path | None = None
) -> Observations:
    """Run ``scenario`` from scratch and return what the observers saw; its work directory
    (the agent's log and state) is left for the caller to keep or remove."""
    workdir = Path(tempfile.mkdtemp(prefix=f"soak-{scenario.seed}-{scenario.index}-", dir=base_dir))
    workdir.chmod(0o755)
    run = _Run(scenario, launcher, workdir)
    try:
        run.set_up()
        run.start_agent()
        if not run.wait_armed():
            run.obs.error = "the agent never held its first lock"
        else:
            run.plan_timeline()
            run.play()
            run.settle()
            run.state_monitor.check_now()
            run.collect()
    except Exception:  # noqa: BLE001 - a broken run is reported, the soak goes on
        run.obs.error = traceback.format_exc(limit=6)
    finally:
        run.tear_down()
    if run.obs.error is not None:
        run.obs.error += "\n--- agent log tail ---\n" + _tail(run.log)
    return run.obs


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
