"""Benchmark: the agent beside a real kubelet: shutdowns, the readiness lift, usage figures.

Everything else measures the agent against stand-ins; this runs it where it runs in a
cluster. It brings up a one-node cluster on this machine (``kubeletnode/``): etcd,
kube-apiserver (Node and RBAC authorization, NodeRestriction), kube-scheduler,
kube-controller-manager, Debian's containerd and runc, a CNI bridge and a real kubelet
v1.28.7 registered with the readiness gate's taint; the real systemd-logind on a private
bus (the test suite's harness: a private dbus-daemon and a systemd1 stand-in that answers
logind's ``StartUnit(poweroff.target)`` and ends the job, so logind cancels the shutdown
and the next run can start); and ``kubelet-companion agent`` as its own process with a token
of its ServiceAccount (``kubeletnode/companion.py`` says which token, and why).

Workload (``kubeletnode/workload.py``): bare pods in three priority buckets (0, 100000 and
``system-cluster-critical``; six seconds each), a Deployment of two whose replacements the
scheduler would bind to the node, and a critical DaemonSet pod the shutdown leaves alone.
Every container writes its SIGTERM's time (``$EPOCHREALTIME``) to a file on the node.

Measured, in ``--runs`` shutdowns (logind's ``PowerOff``, then the release and the
cancellation), with the figures' sources (``kubeletnode/figures.py``):

- the taint against the first pod write: the Node's revision carrying the shutting-down
  taint below the revision of the first pod marked deleting or DisruptionTarget (one etcd:
  revisions order every write), every run;
- pods bound to the node between PrepareForShutdown(true) and the release (as the watch
  saw them), or written bound while the taint was on (by revision, whatever the watch's
  delay): none, while the Deployment's replacements wait and are bound right after the
  cancellation lifts the taint;
- each container's SIGTERM after its phase's start (the agent's ``shutdown phase started``
  line, same clock): within 0.3 s, and before its phase's deadline; the DaemonSet pod
  gets none;
- the lock's release (the systemd1 stand-in's ``StartUnit``) after PrepareForShutdown(true):
  within the budget every run.

Also: the readiness lift (the critical DaemonSet pod Ready in the API, to the gate's taint
gone: at bootstrap, then ``--readiness-runs`` times re-armed with its pod made unready
through its probe); the per-pod CPU and memory of the NodeReport and of
``kubelet-companion report --json`` against the kubelet's ``/stats/summary`` (through the
API server's proxy), with a pod burning a known share of a CPU and holding a known
amount of memory; and whether ``doctor --json``, ``report --json`` and ``swap report
--json`` print one JSON document on this node.

Skips (exit 0, no results file) when not root, or the binaries (``$KUBE_BIN_DIR`` or
``--kube-bin-dir``: kube-apiserver, kube-scheduler, kube-controller-manager, kubelet) or the
Debian packages are missing (``kubeletnode/requirements.py`` says which). Leaves no process
and nothing on the host behind; ``--keep-logs DIR`` keeps every component's log.

Run: .venv/bin/python -m scripts.benchmarks.realnode [--runs 10] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agent.kube.patches import escape_pointer
from agent.readiness.presets import BOOTSTRAP_COMPLETED_ANNOTATION
from agent.shutdown.taint import SHUTTING_DOWN
from agent.shutdown.terminate import MARK_HEAD_START
from scripts.benchmarks.kubeletnode import companion, figures, requirements, watch, workload
from scripts.benchmarks.kubeletnode.node import RealNode
from scripts.benchmarks.livecluster.api import Api
from scripts.benchmarks.livecluster.controlplane import free_port
from scripts.benchmarks.results import Results, add_output_argument
from tests.harness.logind import LogindHarness

NODE = "realnode"
CRITICAL_PRIORITY = 2000000000
BUCKETS = ((0, 6), (workload.MID_PRIORITY, 6), (CRITICAL_PRIORITY, 6))
BUDGET = sum(seconds for _, seconds in BUCKETS)
TERM_TARGET = 0.3
API_POLL = 0.5
"""Seconds between polls that list pods: the API server serves the run meanwhile."""
FLOOR_PODS = 4
"""Deleted at once for the baseline: as many as the first phase stops."""
COMMANDS = (("doctor", "--json"), ("report", "--json"), ("swap", "report", "--json"))
JSON_PATCH = "application/json-patch+json"


def wait_for(what: str, check: Callable[[], Any], timeout: float, every: float = 0.05) -> Any:
    """Poll ``check`` every ``every`` seconds until it returns something true; that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:g} s")
        time.sleep(every)


def wall_of(monotonic: float) -> float:
    """A ``time.monotonic`` instant on the Unix clock (the containers' and the agent's)."""
    return time.time() - (time.monotonic() - monotonic)


class Bench:
    def __init__(self, tools: requirements.Tools, directory: Path, args: argparse.Namespace):
        self.args = args
        self.directory = directory
        self.host_dir = directory / "termlogs"
        self.node = RealNode(
            tools,
            directory / "node",
            NODE,
            register_with_taints=({"key": workload.GATE.taint, "effect": "NoSchedule"},),
        )
        self.harness = LogindHarness()
        self.agent = companion.CompanionProcess(directory / "agent.yaml", directory / "agent.log")
        self.metrics_port = free_port()
        self.pods = watch.pods(self.api)
        self.nodes = watch.nodes(self.api)
        self.credentials = ""
        self.readiness: list[float] = []
        self.runs: list[dict[str, Any]] = []
        self.usage: dict[str, Any] = {}
        self.commands: list[list[str]] = []
        self.floor: list[tuple[float, float, float]] = []
        """(DELETEs sent -> TERM, seen deleting -> TERM, sent -> seen deleting) of each pod
        deleted by plain DELETEs."""
        self.problems: list[str] = []

    @property
    def api(self) -> Api:
        return self.node.api

    # -- set-up -----------------------------------------------------------------------

    def set_up(self) -> None:
        started = time.monotonic()
        self.host_dir.mkdir(parents=True)
        self.node.start()
        print(f"real node up in {time.monotonic() - started:.0f} s", flush=True)
        api = self.api
        for recorder in (self.pods, self.nodes):
            recorder.start()
            wait_for(f"{recorder.name} synced", recorder.synced.is_set, 30)
        companion.apply_base(api)
        companion.create(api, workload_priority_class())
        # The critical DaemonSet comes before the agent, its pod kept unready by its probe:
        # the gate's first verdict is "hold", never a lift that a DaemonSet arriving a moment
        # later would overturn (see the notes: a failed lift followed by a hold stalls the
        # agent's event loop).
        (self.host_dir / workload.NOT_READY_FILE).touch()
        companion.create(api, workload.daemon_set(str(self.host_dir)))
        wait_for("the DaemonSet pod", self._daemon_set_pod, 60)
        self.harness.start()
        credentials = companion.agent_token(api, NODE)
        self.credentials = credentials.how
        kubeconfig = self.directory / "agent.kubeconfig"
        self.node.control_plane.write_kubeconfig(kubeconfig, credentials.token, companion.ACCOUNT)
        self.agent.config.write_text(
            companion.config_text(
                node=NODE,
                state_dir=self.directory / "agent-state",
                metrics_port=self.metrics_port,
                dropin=self.harness.dropin_dir / "99-zz-kubelet-companion.conf",
                buckets=BUCKETS,
            )
        )
        self.agent.start(
            companion.agent_env(kubeconfig, self.harness.bus_address, NODE, self.directory)
        )
        self._wait_lock()

    def _wait_lock(self) -> None:
        def held() -> bool:
            if not self.agent.alive():
                raise RuntimeError(f"the agent exited; see {self.directory / 'agent.log'}")
            return companion.metric(self.metrics_port, "kubelet_companion_inhibitor_lock_held") == 1

        wait_for("the agent's lock", held, 60)

    # -- readiness --------------------------------------------------------------------

    def readiness_bootstrap(self) -> None:
        """The node registered with the gate; the agent holds it while the critical
        DaemonSet's pod is unready; then the pod turns Ready, and the taint goes."""
        self._release_gate()

    def readiness_round(self) -> None:
        """Re-arm the gate with the DaemonSet pod unready, then let the pod be Ready."""
        key = self._daemon_set_pod()
        (self.host_dir / workload.NOT_READY_FILE).touch()
        wait_for("the DaemonSet pod unready", lambda: self._ready(key) is False, 30)
        node = self.api.ok("GET", f"/api/v1/nodes/{NODE}")
        taints = node["spec"].get("taints") or []
        patch: list[dict[str, Any]] = [
            {
                "op": "test",
                "path": "/metadata/resourceVersion",
                "value": node["metadata"]["resourceVersion"],
            },
            {
                "op": "add",
                "path": "/spec/taints",
                "value": [*taints, {"key": workload.GATE.taint, "effect": "NoSchedule"}],
            },
        ]
        if BOOTSTRAP_COMPLETED_ANNOTATION in (node["metadata"].get("annotations") or {}):
            escaped = escape_pointer(BOOTSTRAP_COMPLETED_ANNOTATION)
            patch.append({"op": "remove", "path": f"/metadata/annotations/{escaped}"})
        self.api.ok("PATCH", f"/api/v1/nodes/{NODE}", patch, content_type=JSON_PATCH)
        self._release_gate()

    def _release_gate(self) -> None:
        """Once the agent holds the gate, let the DaemonSet pod be Ready; time the lift."""
        wait_for(
            "the agent holding the gate",
            lambda: (
                companion.metric(self.metrics_port, "kubelet_companion_readiness_gate_held") == 1
            ),
            60,
        )
        since = time.monotonic()
        (self.host_dir / workload.NOT_READY_FILE).unlink()
        self.readiness.append(self._lift(since))

    def _lift(self, since: float) -> float:
        pods, nodes = self.pods, self.nodes

        def lifted() -> float | None:
            return figures.taint_lifted_at(nodes.records(), workload.GATE.taint, since)

        lifted_at = wait_for("the gate's taint lifted", lifted, 120)
        key = wait_for("the DaemonSet pod", self._daemon_set_pod, 5)
        ready = figures.ready_at(pods.records(), key, since)
        if ready is None:
            raise RuntimeError("the gate was lifted before its DaemonSet pod was Ready")
        return float(lifted_at - ready)

    def _daemon_set_pod(self) -> str:
        namespace, name = workload.DAEMON_SET
        status, listed = self.api.request(
            "GET", f"/api/v1/namespaces/{namespace}/pods", params={"labelSelector": f"app={name}"}
        )
        items = [p for p in listed.get("items") or [] if not p["metadata"].get("deletionTimestamp")]
        return f"{namespace}/{items[0]['metadata']['name']}" if status == 200 and items else ""

    def _ready(self, key: str) -> bool | None:
        """Whether the watch's latest event of ``key`` shows it Ready."""
        latest = [p for p in self.pods.records() if p.key == key]
        return latest[-1].ready if latest else None

    # -- the workload -----------------------------------------------------------------

    def workload_up(self) -> None:
        companion.create(self.api, workload.deployment(str(self.host_dir)))
        self._bare_pods()

    def _bare_pods(self) -> None:
        for pod in workload.BARE_PODS:
            companion.create(self.api, workload.bare_pod(pod, str(self.host_dir)))
        wait_for("every pod on the node Ready and settled", self._steady, 120, API_POLL)

    def _steady(self, extra: int = 0) -> bool:
        """Every workload pod (and ``extra`` more) bound here and Ready for ``--settle``
        seconds at least, none deleting, nothing pending. (A pod whose containers have just
        started keeps the kubelet busy a while; a node that has been up for some time has
        none such when it shuts down.)"""
        status, listed = self.api.request("GET", "/api/v1/pods")
        if status != 200:
            return False
        pods = [
            p for p in listed["items"] if p["metadata"]["namespace"] in ("default", "kube-system")
        ]
        wanted = len(workload.BARE_PODS) + workload.DEPLOYMENT[2] + 1 + extra
        settled = time.time() - self.args.settle
        ready = [
            p
            for p in pods
            if p["spec"].get("nodeName") == NODE
            and not p["metadata"].get("deletionTimestamp")
            and (since := figures.ready_since(p)) is not None
            and since <= settled
        ]
        return len(ready) == wanted == len(pods)

    # -- the kubelet alone: a plain delete, the floor of every SIGTERM ---------------------

    def kubelet_floor(self) -> None:
        """As many pods as the first phase stops, like the workload's, deleted at once by
        plain DELETEs (one thread each) once settled: what any client gets from this API
        server and this kubelet, on the same node under the same load."""
        pods = [
            workload.BarePod("default", f"floor-{index}", (workload.Container("app"),))
            for index in range(FLOOR_PODS)
        ]
        paths = [f"/api/v1/namespaces/default/pods/{pod.name}" for pod in pods]
        for pod in pods:
            companion.create(self.api, workload.bare_pod(pod, str(self.host_dir)))
        wait_for(
            "the floor pods Ready and settled",
            lambda: self._steady(extra=FLOOR_PODS),
            120,
            API_POLL,
        )
        uids = [self.api.ok("GET", path)["metadata"]["uid"] for path in paths]
        since = time.monotonic()
        sent = time.time()
        with ThreadPoolExecutor(FLOOR_PODS) as pool:
            list(pool.map(self._plain_delete, paths))
        for path in paths:
            wait_for("a floor pod gone", lambda p=path: self.api.request("GET", p)[0] == 404, 60)
        logs = self._container_logs()
        seen = figures.deleting_at(self.pods.records(), since)
        for uid in uids:
            term = figures.first_term(logs, {uid}, sent)
            if term is None or uid not in seen:
                raise RuntimeError("a floor pod went without a TERM (or a deleting event) seen")
            self.floor.append((term - sent, term - wall_of(seen[uid]), wall_of(seen[uid]) - sent))

    def _plain_delete(self, path: str) -> None:
        self.api.ok("DELETE", path, {"gracePeriodSeconds": workload.GRACE_SECONDS})

    # -- usage: the NodeReport and the report command against the kubelet ----------------

    def usage_comparison(self) -> None:
        burner = workload.burner(str(self.host_dir), cpu=self.args.burn_cpu, memory_mib=64)
        companion.create(self.api, burner)
        print(f"usage: letting the burner run {self.args.usage_settle} s", flush=True)
        time.sleep(self.args.usage_settle)  # the report smooths its samples: time to converge
        samples = []
        for index in range(self.args.usage_samples):
            if index:
                time.sleep(10)
            report = self.api.ok("GET", f"/apis/kubelet-companion.io/v1alpha1/nodereports/{NODE}")
            summary = self.api.ok("GET", f"/api/v1/nodes/{NODE}/proxy/stats/summary")
            command = self.agent.run_command("report", "--json")
            samples.append(
                {
                    "nodereport": figures.compare_usage(
                        (report.get("status") or {}).get("pods") or [], summary
                    ),
                    "command": figures.compare_usage(_command_pods(command.stdout), summary),
                    "command_status": command.returncode,
                }
            )
        self.usage = {"samples": samples, "burn_cpu": self.args.burn_cpu}
        self.api.request("DELETE", "/api/v1/namespaces/default/pods/burner")
        wait_for(
            "the burner gone",
            lambda: self.api.request("GET", "/api/v1/namespaces/default/pods/burner")[0] == 404,
            60,
        )

    def run_commands(self) -> None:
        for args in COMMANDS:
            done = self.agent.run_command(*args)
            parsed, summary = figures.command_summary(done.stdout)
            stderr = done.stderr.strip().splitlines()
            self.commands.append(
                [
                    "kubelet-companion " + " ".join(args),
                    str(done.returncode),
                    "yes" if parsed else "no",
                    summary[:300] + (f"; stderr: {len(stderr)} lines" if stderr else ""),
                ]
            )
            name = "-".join(a for a in args if not a.startswith("-"))
            (self.directory / f"command-{name}.out").write_text(
                done.stdout + "\n--- stderr ---\n" + done.stderr
            )

    # -- one shutdown ----------------------------------------------------------------

    def shutdown_run(self, index: int) -> dict[str, Any]:
        wait_for("every pod on the node Ready and settled", self._steady, 120, API_POLL)
        self._wait_lock()
        wait_for("no shutting-down taint", lambda: not self._tainted(SHUTTING_DOWN.key), 30)
        priorities, daemon_pods = self._pods_now()
        log_offset = self._log_size()
        revision = self.pods.revision()

        since = time.monotonic()
        self.harness.power_off()
        signalled = self.harness.wait_for_prepare_for_shutdown(True, 5, since=since)
        start = self.harness.systemd1.wait_for_call("StartUnit", timeout=BUDGET + 30, since=since)
        released = start.time
        self.harness.wait_for_prepare_for_shutdown(False, 15, since=released)
        nodes = self.nodes
        wait_for(
            "the shutting-down taint removed",
            lambda: figures.taint_lifted_at(nodes.records(), SHUTTING_DOWN.key, released),
            30,
        )
        shutdown = wait_for("the agent's finished line", lambda: self._shutdown_log(log_offset), 30)
        # The last pod write of the run must reach the watch before the figures are read.
        wait_for("the deleted pods gone", lambda: self._gone(set(priorities)), 60)
        pods = self.pods.records()
        deleting = {uid: wall_of(at) for uid, at in figures.deleting_at(pods, since).items()}
        marked = {uid: wall_of(at) for uid, at in figures.marked_at(pods, since).items()}
        logs = self._container_logs()
        timings, silent = figures.term_timings(
            logs,
            priorities,
            shutdown,
            BUCKETS,
            since=wall_of(signalled) - 1,
            until=wall_of(released) + 1,
            deleting=deleting,
        )
        order = figures.write_order(self.nodes.records(), pods, SHUTTING_DOWN.key, NODE, revision)
        nodes_seen = self.nodes.records()
        removed = figures.taint_removed_revision(
            nodes_seen, SHUTTING_DOWN.key, order.taint_revision or revision
        )
        window = figures.binding_window(
            figures.bindings(pods, NODE),
            signalled,
            released,
            tainted=(order.taint_revision, removed),
        )
        first = figures.first_term(logs, set(priorities), wall_of(signalled) - 1)
        run = {
            "run": index,
            "release": released - signalled,
            "released_by": shutdown.released_by,
            "taint_first": order.taint_first,
            "taint_revision": order.taint_revision,
            "first_write_revision": order.first_pod_write_revision,
            "first_write": order.first_pod_write,
            "taint_lead": (order.first_write_seen_at or math.nan)
            - (order.taint_seen_at or math.nan),
            "taint_wait": shutdown.taint_waited,
            "untainted": shutdown.started_untainted,
            "signal_to_first_term": math.nan if first is None else first - wall_of(signalled),
            "term_after_phase_start": [t.after_phase_start for t in timings],
            "term_after_delete": [t.after_delete for t in timings if t.after_delete is not None],
            "term_before_delete": [t.before_delete for t in timings if t.before_delete is not None],
            "term_before_deadline": [t.before_deadline for t in timings],
            "marked_after_phase_start": [
                marked[t.uid] - t.phase_started for t in timings if t.uid in marked
            ],
            "terms": len(timings),
            "silent": silent,
            "daemon_terms": figures.terms_in(
                logs, daemon_pods, wall_of(signalled) - 1, time.time()
            ),
            "late_pods": list(shutdown.late_pods),
            "phases": [f"{p.priority}:{p.status}:{p.gone}/{p.pods}" for p in shutdown.phases],
            "bound": window.bound,
            "replacements": window.created,
            "replacement_wait": window.waited,
        }
        print(
            f"run {index}: release {run['release']:.2f} s ({shutdown.released_by}), taint first "
            f"{order.taint_first} (rev {order.taint_revision} < {order.first_pod_write_revision} "
            f"{order.first_pod_write}), {len(timings)} TERMs, latest after its phase's start "
            f"{_latest_ms(run['term_after_phase_start'])}, bound {len(window.bound)}, "
            f"replacements {window.created}, no TERM {silent}, DaemonSet TERMs "
            f"{run['daemon_terms']}",
            flush=True,
        )
        self._bare_pods()
        return run

    def _pods_now(self) -> tuple[dict[str, int], set[str]]:
        """uid -> priority of the pods the shutdown must stop; the DaemonSet pods' uids."""
        priorities, daemon_pods = {}, set()
        for pod in self.api.ok("GET", "/api/v1/pods")["items"]:
            uid = pod["metadata"]["uid"]
            owners = pod["metadata"].get("ownerReferences") or []
            if any(o.get("kind") == "DaemonSet" for o in owners):
                daemon_pods.add(uid)
            else:
                priorities[uid] = int(pod["spec"].get("priority") or 0)
        return priorities, daemon_pods

    def _tainted(self, key: str) -> bool:
        node = self.api.ok("GET", f"/api/v1/nodes/{NODE}")
        return any(t.get("key") == key for t in node["spec"].get("taints") or [])

    def _gone(self, uids: set[str]) -> bool:
        status, listed = self.api.request("GET", "/api/v1/pods")
        return status == 200 and not ({p["metadata"]["uid"] for p in listed["items"]} & uids)

    def _log_size(self) -> int:
        path = self.directory / "agent.log"
        return path.stat().st_size if path.exists() else 0

    def _shutdown_log(self, offset: int) -> figures.ShutdownLog | None:
        with (self.directory / "agent.log").open("rb") as log:
            log.seek(offset)
            text = log.read().decode(errors="replace")
        shutdown = figures.parse_shutdown(figures.json_lines(text))
        return shutdown if shutdown.released_by else None

    def _container_logs(self) -> list[figures.ContainerLog]:
        found = []
        for path in self.host_dir.glob("*.log"):
            parsed = figures.parse_container_log(
                path.name, path.read_text(errors="replace")[:65536]
            )
            if parsed is not None:
                found.append(parsed)
        return found

    # -- tear-down --------------------------------------------------------------------

    def close(self) -> None:
        status = self.agent.stop()
        if status not in (0, None):
            self.problems.append(f"the agent exited with {status} at its stop")
        for recorder in (self.pods, self.nodes):
            recorder.stopping.set()
        try:
            self.harness.stop()
        except Exception as error:  # noqa: BLE001 - reported, the node is still stopped
            self.problems.append(f"logind harness: {error}")
        self.problems += self.node.stop()


def workload_priority_class() -> dict[str, Any]:
    from tests.harness import kubeobjects  # noqa: PLC0415 - only here

    return kubeobjects.priority_class(workload.MID_CLASS, workload.MID_PRIORITY)


def _command_pods(stdout: str) -> list[dict[str, Any]]:
    try:
        document = json.loads(stdout)
    except ValueError:
        return []
    found = document.get("pods") if isinstance(document, dict) else None
    if found is None and isinstance(document, dict):
        found = (document.get("status") or {}).get("pods")
    return list(found or [])


# -- figures --------------------------------------------------------------------------------


def ms(values: list[float]) -> list[float]:
    """Seconds to milliseconds; NaN (nothing measured) left out."""
    return [1000 * v for v in values if not math.isnan(v)]


def emit(bench: Bench, args: argparse.Namespace, results: Results) -> Results:
    runs = bench.runs
    results.settings = {
        "shutdowns": len(runs),
        "buckets (priority: s)": ", ".join(f"{p}: {s}" for p, s in BUCKETS),
        "budget (s)": BUDGET,
        "readiness lifts": len(bench.readiness),
        "settled before each shutdown (s)": args.settle,
        "agent credentials": bench.credentials,
    }
    if runs:
        _shutdown_figures(results, runs, bench.floor)
    if bench.floor:
        results.add(
            "floor_term",
            f"plain DELETEs of {FLOOR_PODS} settled pods at once -> each SIGTERM",
            ms([f[0] for f in bench.floor]),
            "ms",
            over="SIGTERMs",
            note=f"the latest {max(f[0] for f in bench.floor) * 1000:.0f} ms",
        )
        results.add(
            "floor_seen",
            f"plain DELETEs of {FLOOR_PODS} settled pods at once -> each seen deleting (watch)",
            ms([f[2] for f in bench.floor]),
            "ms",
            over="pods",
            note=f"the latest {max(f[2] for f in bench.floor) * 1000:.0f} ms",
        )
    if bench.readiness:
        results.add(
            "readiness_lift",
            "critical DaemonSet pod Ready (API) -> the gate's taint removed",
            ms(bench.readiness),
            "ms",
            note="the first at bootstrap, then re-armed",
        )
    _usage_figures(results, bench.usage)
    if bench.commands:
        results.tables.append(
            {
                "title": "One-shot commands on the real node (stdout must be one JSON document)",
                "columns": ["command", "exit", "stdout parses", "output"],
                "rows": bench.commands,
            }
        )
    if bench.problems:
        results.tables.append(
            {
                "title": "Clean-up problems",
                "columns": ["problem"],
                "rows": [[p] for p in bench.problems],
            }
        )
    results.write(args.json)
    return results


def _why_late(runs: list[dict[str, Any]], floor: list[tuple[float, float, float]]) -> str:
    """Where the latest SIGTERM's time went, against what plain DELETEs got."""
    latest = max(
        (
            (after, agent, kubelet)
            for r in runs
            for after, agent, kubelet in zip(
                r["term_after_phase_start"],
                r["term_before_delete"],
                r["term_after_delete"],
                strict=False,
            )
        ),
        default=None,
    )
    text = "no split"
    if latest is not None:
        text = (
            f"the latest: {latest[1] * 1000:.0f} ms to the pod seen deleting, then "
            f"{latest[2] * 1000:.0f} ms to its SIGTERM"
        )
    if floor:
        text += (
            f"; plain DELETEs of {FLOOR_PODS} pods at once: the latest seen deleting after "
            f"{max(f[2] for f in floor) * 1000:.0f} ms, SIGTERM after "
            f"{max(f[0] for f in floor) * 1000:.0f} ms"
        )
    return text


def _floor_text(floor: list[tuple[float, float, float]]) -> str:
    if not floor:
        return ""
    sent = statistics.median(f[0] for f in floor) * 1000
    latest = max(f[0] for f in floor) * 1000
    return (
        f"plain DELETEs of {FLOOR_PODS} settled pods at once -> each SIGTERM: median "
        f"{sent:.0f} ms, the latest {latest:.0f} ms ({len(floor)} pods)"
    )


def _shutdown_figures(
    results: Results, runs: list[dict[str, Any]], floor: list[tuple[float, float, float]]
) -> None:
    count = len(runs)
    after = [v for r in runs for v in r["term_after_phase_start"]]
    margin = [v for r in runs for v in r["term_before_deadline"]]
    waited = [w for r in runs for w in r["replacement_wait"]]
    replacements = sum(r["replacements"] for r in runs)
    results.add(
        "taint_first",
        "shutdowns whose taint was stored before the first pod write (etcd revisions)",
        [100.0 if r["taint_first"] else 0.0 for r in runs],
        "%",
        value=100.0 * sum(1 for r in runs if r["taint_first"]) / count,
        target=(">=", 100.0),
        why_missed="; ".join(
            f"run {r['run']}: taint rev {r['taint_revision']}, first write rev "
            f"{r['first_write_revision']} ({r['first_write']})"
            for r in runs
            if not r["taint_first"]
        ),
        note=f"the share of all {count}",
    )
    results.add(
        "taint_lead",
        "the taint's watch event ahead of the first pod write's",
        ms([r["taint_lead"] for r in runs]),
        "ms",
        baseline="the agent's own wait for the taint: median "
        f"{statistics.median(ms([r['taint_wait'] or 0.0 for r in runs])):.0f} ms",
    )
    results.add(
        "bound",
        "pods bound to the node from PrepareForShutdown(true) to the release",
        [float(len(r["bound"])) for r in runs],
        "pods",
        value=float(max(len(r["bound"]) for r in runs)),
        target=("<=", 0.0),
        baseline=f"{replacements} replacements made meanwhile, all kept off, bound a median "
        f"{figures.median_or_nan(waited):.2f} s after the release (the taint comes off at "
        "the cancellation)",
        why_missed=", ".join(k for r in runs for k in r["bound"]),
        note="the most in one shutdown",
    )
    results.add(
        "term_latest",
        "each container's SIGTERM after its phase started: the latest",
        ms(after),
        "ms",
        value=1000 * max(after),
        over="SIGTERMs",
        target=("<=", TERM_TARGET * 1000),
        why_missed=_why_late(runs, floor),
    )
    results.add(
        "term_median",
        "each container's SIGTERM after its phase started",
        ms(after),
        "ms",
        over="SIGTERMs",
        baseline=_floor_text(floor),
    )
    agent_share = [v for r in runs for v in r["term_before_delete"]]
    if agent_share:
        results.add(
            "term_agent_share",
            "the agent's share: its phase started -> the pod seen deleting (watch)",
            ms(agent_share),
            "ms",
            over="SIGTERMs",
            note=f"the latest {max(agent_share) * 1000:.0f} ms",
        )
    marked = [v for r in runs for v in r["marked_after_phase_start"]]
    if marked:
        results.add(
            "term_marked",
            "  of which: its phase started -> the pod's DisruptionTarget seen (watch)",
            ms(marked),
            "ms",
            over="SIGTERMs",
            note=(
                f"the latest {max(marked) * 1000:.0f} ms; the delete waits"
                f" {MARK_HEAD_START * 1000:.0f} ms at most for it"
            ),
        )
    kubelet_share = [v for r in runs for v in r["term_after_delete"]]
    if kubelet_share:
        results.add(
            "term_kubelet_share",
            "the kubelet's share: the pod seen deleting (watch) -> its container's SIGTERM",
            ms(kubelet_share),
            "ms",
            over="SIGTERMs",
        )
    results.add(
        "term_margin",
        "each SIGTERM before its phase's deadline: the least",
        ms(margin),
        "ms",
        value=1000 * min(margin),
        over="SIGTERMs",
        target=(">=", 0.0),
    )
    results.add(
        "first_term",
        "PrepareForShutdown(true) -> the first container's SIGTERM",
        ms([r["signal_to_first_term"] for r in runs]),
        "ms",
    )
    release = [r["release"] for r in runs]
    results.add(
        "release_latest",
        "PrepareForShutdown(true) -> lock released (StartUnit): the latest",
        ms(release),
        "ms",
        value=1000 * max(release),
        target=("<=", BUDGET * 1000.0),
        baseline=f"released by: {', '.join(sorted({r['released_by'] for r in runs}))}",
    )
    results.add(
        "release", "PrepareForShutdown(true) -> lock released (StartUnit)", ms(release), "ms"
    )
    results.tables.append(
        {
            "title": "Each shutdown",
            "columns": [
                "run",
                "release",
                "by",
                "taint rev < first write rev",
                "first write",
                "SIGTERMs (latest after phase start)",
                "phases (priority:status:gone/pods)",
                "bound",
                "replacements",
                "DaemonSet TERMs",
                "late pods",
                "no TERM",
            ],
            "rows": [
                [
                    str(r["run"]),
                    f"{r['release']:.2f} s",
                    r["released_by"],
                    f"{r['taint_revision']} < {r['first_write_revision']}: {r['taint_first']}",
                    r["first_write"],
                    f"{r['terms']} ({_latest_ms(r['term_after_phase_start'])})",
                    " ".join(r["phases"]),
                    str(len(r["bound"])),
                    str(r["replacements"]),
                    str(len(r["daemon_terms"])),
                    str(len(r["late_pods"])),
                    ", ".join(r["silent"]) or "-",
                ]
                for r in runs
            ],
        }
    )


def _latest_ms(values: list[float]) -> str:
    return f"{max(values) * 1000:.0f} ms" if values else "-"


def _usage_figures(results: Results, usage: dict[str, Any]) -> None:
    samples = usage.get("samples") or []
    if not samples:
        return
    rows = []
    for source in ("nodereport", "command"):
        pairs = [p for s in samples for p in s[source][0]]
        burner = [p for p in pairs if p.key == "default/burner"]
        only_kubelet = samples[-1][source][1]
        label = "NodeReport" if source == "nodereport" else "report --json"
        if burner:
            results.add(
                f"{source}_burner_cpu",
                f"{label}: the burner's CPU minus the kubelet's (limit {usage['burn_cpu']})",
                [1000 * (p.report_cpu - p.kubelet_cpu) for p in burner],
                "mcores",
                over="samples",
                baseline="the kubelet's: median "
                f"{statistics.median(1000 * p.kubelet_cpu for p in burner):.0f} mcores",
            )
            results.add(
                f"{source}_burner_memory",
                f"{label}: the burner's working set / the kubelet's",
                [p.report_memory / p.kubelet_memory for p in burner if p.kubelet_memory],
                "x",
                over="samples",
                baseline="the kubelet's: median "
                f"{statistics.median(p.kubelet_memory for p in burner) / 2**20:.1f} MiB",
            )
        if pairs:
            results.add(
                f"{source}_memory_gap",
                f"{label}: |working set - the kubelet's| per pod",
                [abs(p.report_memory - p.kubelet_memory) / 2**20 for p in pairs],
                "MiB",
                over="pod samples",
            )
        last = samples[-1][source][0]
        rows += [
            [
                label,
                p.key,
                f"{p.report_cpu * 1000:.0f}",
                f"{p.kubelet_cpu * 1000:.0f}",
                f"{p.report_memory / 2**20:.1f}",
                f"{p.kubelet_memory / 2**20:.1f}",
            ]
            for p in last
        ]
        rows.append(
            [
                label,
                f"{len(last)} pods in both; only the kubelet's: {len(only_kubelet)}"
                + (f" ({', '.join(only_kubelet[:4])}...)" if only_kubelet else ""),
                "",
                "",
                "",
                "",
            ]
        )
    results.tables.append(
        {
            "title": "Per-pod usage, last sample (mcores, MiB)",
            "columns": ["source", "pod", "cpu", "kubelet cpu", "memory", "kubelet memory"],
            "rows": rows,
        }
    )


# -- entry point ----------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="shutdowns")
    parser.add_argument("--readiness-runs", type=int, default=5, help="re-armed gate lifts")
    parser.add_argument("--usage-settle", type=float, default=120, help="seconds of burning")
    parser.add_argument("--usage-samples", type=int, default=5)
    parser.add_argument("--burn-cpu", default="250m", help="the burner pod's CPU limit")
    parser.add_argument(
        "--settle", type=float, default=10, help="seconds every pod is Ready before a shutdown"
    )
    parser.add_argument("--floor-runs", type=int, default=5, help="plain deletes (kubelet alone)")
    parser.add_argument(
        "--kube-bin-dir", type=Path, help="kube-apiserver, ..., kubelet (default $KUBE_BIN_DIR)"
    )
    parser.add_argument("--keep-logs", type=Path, help="copy every component's log here")
    add_output_argument(parser)
    args = parser.parse_args()
    if args.kube_bin_dir is not None:
        os.environ["KUBE_BIN_DIR"] = str(args.kube_bin_dir)
    tools, missing = requirements.find()
    if tools is None:
        print(f"realnode: skipped ({missing})")
        return 0
    results = Results("realnode", "Beside a real kubelet")  # its start: the run's start
    directory = Path(tempfile.mkdtemp(prefix="kc-bench-realnode-"))
    bench = Bench(tools, directory, args)
    status = 1
    try:
        bench.set_up()
        bench.readiness_bootstrap()
        for _ in range(args.readiness_runs):
            bench.readiness_round()
        print(f"readiness lifts (ms): {[round(v * 1000) for v in bench.readiness]}", flush=True)
        bench.workload_up()
        bench.run_commands()
        if args.usage_samples:
            bench.usage_comparison()
        for _ in range(args.floor_runs):
            bench.kubelet_floor()
        for index in range(args.runs):
            bench.runs.append(bench.shutdown_run(index))
        status = 0
    finally:
        bench.close()
        if args.keep_logs is not None:
            _keep(directory, args.keep_logs)
        if bench.problems:
            print("clean-up problems:\n  " + "\n  ".join(bench.problems), file=sys.stderr)
        else:
            subprocess.run(["rm", "-rf", "--one-file-system", str(directory)], check=False)
    emit(bench, args, results)
    return status


def _keep(directory: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for path in [*directory.glob("*.log"), *directory.glob("*.out"), *directory.glob("node/*.log")]:
        shutil.copy2(path, target / path.name)
    for path in (directory / "node" / "control-plane").glob("*.log"):
        shutil.copy2(path, target / path.name)
    shutil.copytree(directory / "termlogs", target / "termlogs", dirs_exist_ok=True)


if __name__ == "__main__":
    sys.exit(main())
