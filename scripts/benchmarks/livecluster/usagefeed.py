"""The agents' and the metrics pipeline's stand-ins: usage out of the kubelet stand-in.

In a usage scenario (``nodes --usage-seed S``) the kubelet stand-in also plays each node's
agent and a node exporter:

- every ``usage.SAMPLE_SECONDS`` it samples the Running pods on its nodes (``usage.sample``);
- every ``usage.REPORT_SECONDS`` it writes each node's NodeReport as the agent writes it
  (``agent.kube.reportwriter``: created owned by the Node, ``blockOwnerDeletion: false``;
  then a merge patch of ``/status``), the document built by the agent's own
  ``agent.report.document.build_status`` from the latest sample with smoothing off (the
  agent's ``smoothing: 1``), ``heartbeatSeconds`` the write interval, and a pod entry for
  every Running pod of the node;
- it serves the latest sample on ``http://127.0.0.1:PORT/metrics`` (``usage.exposition``)
  for a real Prometheus to scrape, and for the benchmark to read the truth at each sample.

Writes that fail are counted and logged; the next round writes the latest figures again.
"""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from agent.kube.reportwriter import report_object
from agent.kube.resources import NODE_REPORTS
from agent.kubesemantics.quantities import quantity_to_bytes
from agent.report.document import Capacity, Identity, build_status
from agent.report.usage import Usage, UsageTracker
from agent.runtime.status import BoardSnapshot
from scripts.benchmarks.livecluster import usage
from scripts.benchmarks.livecluster.api import MERGE_PATCH, Api
from scripts.benchmarks.livecluster.measures import deployment_of, pod_cpu_milli

AGENT_VERSION = "livebench-kubelet"


def pod_memory_bytes(pod: Mapping[str, Any]) -> int:
    total = 0
    for container in pod.get("spec", {}).get("containers", []):
        requests = (container.get("resources") or {}).get("requests") or {}
        if "memory" in requests:
            total += quantity_to_bytes(requests["memory"])
    return total


def pod_load(pod: Mapping[str, Any], nodes: Mapping[str, int]) -> usage.PodLoad | None:
    """A Running pod on one of our nodes, as a sample needs it; else ``None``."""
    node = pod.get("spec", {}).get("nodeName")
    meta = pod["metadata"]
    if node not in nodes or meta.get("deletionTimestamp"):
        return None
    if pod.get("status", {}).get("phase") != "Running":
        return None
    return usage.PodLoad(
        uid=meta["uid"],
        node=node,
        deployment=deployment_of(pod),
        cpu_request=pod_cpu_milli(pod) / 1000,
        memory_request=pod_memory_bytes(pod),
    )


class UsageFeed:
    """Samples, NodeReports and the /metrics endpoint of one kubelet stand-in."""

    def __init__(
        self,
        api: Api,
        *,
        nodes: Mapping[str, int],
        node_uids: Mapping[str, str],
        pods: Callable[[], list[dict[str, Any]]],
        seed: int,
        factors: Mapping[str, float],
        cores: float,
        memory: int,
        allocatable: Mapping[str, str],
        log: Callable[..., None],
    ) -> None:
        self.api = api
        self.nodes = nodes
        self.node_uids = node_uids
        self.pods = pods
        self.seed = seed
        self.cores = cores
        self.memory = memory
        self.allocatable = dict(allocatable)
        self.log = log
        self.noise = usage.uniform_noise(seed)
        self.factors = dict(factors)
        self.lock = threading.Lock()
        self.latest: dict[str, usage.NodeSample] = {}
        self.latest_pods: dict[str, list[dict[str, Any]]] = {}
        self.taken_at = 0.0
        self.created: set[str] = set()
        self.writes = {"ok": 0, "error": 0}

    def factor(self, deployment: str) -> float:
        return self.factors.get(deployment, 1.0)

    # -- sampling ---------------------------------------------------------------------------

    def take_sample(self) -> None:
        on_node: dict[str, list[dict[str, Any]]] = {node: [] for node in self.nodes}
        loads = []
        for pod in self.pods():
            load = pod_load(pod, self.nodes)
            if load is not None:
                loads.append(load)
                on_node[load.node].append(pod)
        samples = usage.sample(
            loads, self.nodes, cores=self.cores, factor=self.factor, noise=self.noise
        )
        with self.lock:
            self.latest, self.latest_pods, self.taken_at = samples, on_node, time.time()

    def sample_loop(self, stop: threading.Event) -> None:
        while not stop.wait(usage.SAMPLE_SECONDS):
            try:
                self.take_sample()
            except Exception as error:  # noqa: BLE001 - the next sample tries again
                self.log("usage sample failed:", repr(error))

    # -- NodeReports ------------------------------------------------------------------------

    def status(self, node: str, sampled: usage.NodeSample, pods: list[dict[str, Any]]) -> Any:
        """The status document the agent would send for this sample (smoothing off)."""
        node_usage = Usage(cpu_cores=sampled.cpu, memory_working_set=float(sampled.memory))
        tracker = UsageTracker(
            weight=1.0,
            node_smoothed=node_usage,
            node_latest=node_usage,
            pods_smoothed={
                uid: Usage(cpu_cores=cpu, memory_working_set=float(memory))
                for uid, (cpu, memory) in sampled.pods.items()
            },
        )
        return build_status(
            identity=Identity(
                agent_version=AGENT_VERSION,
                boot_id=f"b{self.nodes[node]:05d}",
                heartbeat_seconds=usage.REPORT_SECONDS,
            ),
            capacity=Capacity(cpus=round(self.cores), memory=self.memory, swap=0),
            tracker=tracker,
            board=BoardSnapshot(),
            observed_time=self.taken_at,
            node={"status": {"allocatable": self.allocatable}},
            pods=pods,
        )

    def ensure_report(self, node: str) -> bool:
        if node in self.created:
            return True
        status, answer = self.api.request(
            "POST", NODE_REPORTS.path(), report_object(node, self.node_uids[node])
        )
        if status < 300 or status == 409:
            self.created.add(node)
            return True
        self.log("NodeReport create failed", node, status, str(answer)[:200])
        return False

    def write_reports(self) -> None:
        with self.lock:
            samples, pods = self.latest, self.latest_pods
        for node in self.nodes:
            sampled = samples.get(node)
            if sampled is None or not self.ensure_report(node):
                self.writes["error"] += 1
                continue
            status, answer = self.api.request(
                "PATCH",
                NODE_REPORTS.path(name=node, subresource="status"),
                {"status": self.status(node, sampled, pods.get(node, []))},
                content_type=MERGE_PATCH,
            )
            if status < 300:
                self.writes["ok"] += 1
                continue
            if status == 404:  # deleted under us: create it again next round
                self.created.discard(node)
            self.writes["error"] += 1
            self.log("NodeReport status failed", node, status, str(answer)[:200])

    def report_loop(self, stop: threading.Event) -> None:
        while True:
            started = time.monotonic()
            try:
                self.write_reports()
            except Exception as error:  # noqa: BLE001 - the next round writes again
                self.writes["error"] += 1
                self.log("NodeReport writes failed:", repr(error))
            if stop.wait(max(0.0, usage.REPORT_SECONDS - (time.monotonic() - started))):
                return

    # -- /metrics ---------------------------------------------------------------------------

    def exposition(self) -> str:
        with self.lock:
            return usage.exposition(self.latest, self.taken_at)

    def serve(self, port: int) -> http.server.ThreadingHTTPServer:
        feed = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404)
                    return
                body = feed.exposition().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - its name
                """Quiet: Prometheus scrapes every 5 s."""

        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True, name="metrics").start()
        return server
