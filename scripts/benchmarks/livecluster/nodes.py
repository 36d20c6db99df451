"""A kubelet stand-in for N fake nodes: no container runs anywhere, but the API sees kubelets.

- Nodes ``node-00000``... are created with cpu 8, memory 32Gi, pods 110 and the labels
  ``kubernetes.io/hostname`` and ``topology.kubernetes.io/zone=zone-{i % 3}``; those from
  ``--cordoned-from`` on are created unschedulable. Each is made Ready through the status
  subresource and its Ready condition's heartbeat renewed every ``--heartbeat`` seconds. The
  ``not-ready`` taint the API server puts on a new Node (lifted by the node lifecycle
  controller in a real cluster; that controller is off here) is lifted by us.
- A pod bound to one of our nodes becomes Running and Ready at once (every condition, a
  started ready status per container, a pod IP).
- A pod given a deletionTimestamp (an eviction) is deleted with grace 0, as a kubelet does
  once its containers stopped.

Pods are followed with list + watch (relist on 410 Gone); writes go through a pool of worker
threads, and anything a write missed is retried by a resync every few seconds. Run as its
own process (its own interpreter lock, so the benchmark's tracker never slows it):

    python -m livecluster.nodes --server URL --token-file F --ca-file F --nodes 40
        [--cordoned-from 14] [--usage-seed 7 --usage-factors F --metrics-port P]

With ``--usage-seed S --metrics-port P`` it also plays each node's agent: actual usage per
Deployment, NodeReports and a ``/metrics`` endpoint (``usagefeed``).

It prints ``ready`` on stdout once every node is Ready and untainted, then runs until
SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import queue
import signal
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.kubesemantics.quantities import quantity_to_bytes
from scripts.benchmarks.livecluster.api import MERGE_PATCH, STRATEGIC_PATCH, Api, ApiError
from scripts.benchmarks.livecluster.podwatch import ListWatch
from scripts.benchmarks.livecluster.usagefeed import UsageFeed

NOT_READY_TAINTS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}
RUN_AGAIN_AFTER = 15.0
"""A pod we marked Running that the watch still shows otherwise is patched again only after
this long: the watch lags behind our own write."""


def node_name(index: int) -> str:
    return f"node-{index:05d}"


def node_ip(index: int) -> str:
    return f"10.{1 + index // 250}.{index % 250}.1"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def log(*parts: object) -> None:
    print(time.strftime("%H:%M:%S"), *parts, file=sys.stderr, flush=True)


def node_body(index: int, cordoned: bool) -> dict[str, Any]:
    name = node_name(index)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": f"zone-{index % 3}",
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
            },
        },
        "spec": {"unschedulable": cordoned},
    }


def node_status(index: int, full: bool) -> dict[str, Any]:
    stamp = now()
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "kubelet stand-in is posting ready status",
        "lastHeartbeatTime": stamp,
    }
    if not full:
        return {"status": {"conditions": [ready]}}
    ready["lastTransitionTime"] = stamp
    pressure = [
        {
            "type": kind,
            "status": "False",
            "reason": f"KubeletHas{reason}",
            "message": "ok",
            "lastHeartbeatTime": stamp,
            "lastTransitionTime": stamp,
        }
        for kind, reason in (
            ("MemoryPressure", "SufficientMemory"),
            ("DiskPressure", "NoDiskPressure"),
            ("PIDPressure", "SufficientPID"),
        )
    ]
    return {
        "status": {
            "capacity": CAPACITY,
            "allocatable": CAPACITY,
            "conditions": [ready, *pressure],
            "addresses": [
                {"type": "InternalIP", "address": node_ip(index)},
                {"type": "Hostname", "address": node_name(index)},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": f"m{index:05d}",
                "systemUUID": f"u{index:05d}",
                "bootID": f"b{index:05d}",
                "kernelVersion": "6.1.0",
                "osImage": "kubelet stand-in",
                "containerRuntimeVersion": "fake://1.0",
                "kubeletVersion": "v1.28.7",
                "kubeProxyVersion": "v1.28.7",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        }
    }


def running_status(pod: dict[str, Any], index: int, ip: str) -> dict[str, Any]:
    """The pod as its kubelet reports it once every container started and is ready."""
    stamp = now()
    uid = pod["metadata"]["uid"]
    containers = [
        {
            "name": c["name"],
            "image": c.get("image", "fake"),
            "imageID": f"fake://{c.get('image', 'fake')}",
            "containerID": f"fake://{uid[:8]}-{c['name']}",
            "ready": True,
            "started": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": stamp}},
        }
        for c in pod.get("spec", {}).get("containers", [])
    ]
    return {
        # A JSON merge patch replaces lists whole, so patching twice is harmless; the uid
        # makes it a precondition (a recreated pod of the same name is left alone).
        "metadata": {"uid": uid},
        "status": {
            "phase": "Running",
            "hostIP": node_ip(index),
            "hostIPs": [{"ip": node_ip(index)}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": stamp,
            "conditions": [
                {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp}
                for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
            "containerStatuses": containers,
        },
    }


class Kubelets:
    def __init__(self, api: Api, nodes: int, cordoned_from: int | None, heartbeat: float) -> None:
        self.api = api
        self.index = {node_name(i): i for i in range(nodes)}
        self.cordoned_from = cordoned_from
        self.heartbeat = heartbeat
        self.lock = threading.Lock()
        self.pods: dict[str, dict[str, Any]] = {}
        """uid -> the pod's last seen object (only what a decision needs is read)."""
        self.inflight: set[tuple[str, str]] = set()
        self.marked: dict[str, float] = {}
        """uid -> monotonic time we last marked it Running."""
        self.addresses: dict[str, str] = {}
        self.next_address = dict.fromkeys(self.index, 0)
        self.work: queue.Queue[tuple[str, str]] = queue.Queue()
        self.stats = {"running": 0, "deleted": 0, "errors": 0, "relists": 0}
        self.uids: dict[str, str] = {}
        """Node name -> its uid (a NodeReport is owned by it)."""

    # -- nodes ------------------------------------------------------------------------------

    def create_nodes(self) -> None:
        for name, i in self.index.items():
            cordoned = self.cordoned_from is not None and i >= self.cordoned_from
            status, answer = self.api.request("POST", "/api/v1/nodes", node_body(i, cordoned))
            if status >= 300:
                raise ApiError("POST", f"/api/v1/nodes ({name})", status, answer)
            self.uids[name] = answer["metadata"]["uid"]
            self.post_status(name, i, full=True)

    def post_status(self, name: str, index: int, *, full: bool = False) -> None:
        status, node = self.api.request(
            "PATCH",
            f"/api/v1/nodes/{name}/status",
            node_status(index, full),
            content_type=STRATEGIC_PATCH,
        )
        if status >= 300:
            self.stats["errors"] += 1
            log("node status failed", name, status, str(node)[:200])
            return
        taints = node.get("spec", {}).get("taints") or []
        if any(t.get("key") in NOT_READY_TAINTS for t in taints):
            self.untaint(name, node)

    def untaint(self, name: str, node: dict[str, Any]) -> None:
        """Lift the not-ready taints, as the node lifecycle controller would (optimistic
        concurrency: a conflict means someone else wrote; read again, try again)."""
        for _ in range(5):
            taints = node.get("spec", {}).get("taints") or []
            keep = [t for t in taints if t.get("key") not in NOT_READY_TAINTS]
            if len(keep) == len(taints):
                return
            patch = {
                "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                "spec": {"taints": keep or None},
            }
            status, answer = self.api.request(
                "PATCH", f"/api/v1/nodes/{name}", patch, content_type=MERGE_PATCH
            )
            if status < 300:
                return
            if status != 409:
                log("untaint failed", name, status, str(answer)[:200])
                return
            status, node = self.api.request("GET", f"/api/v1/nodes/{name}")
            if status != 200:
                return

    def heartbeats(self, stop: threading.Event) -> None:
        while not stop.wait(self.heartbeat):
            for name, i in self.index.items():
                self.post_status(name, i)

    # -- pods -------------------------------------------------------------------------------

    def action(self, uid: str, pod: dict[str, Any]) -> str | None:
        if pod["metadata"].get("deletionTimestamp"):
            return "delete"
        node = pod.get("spec", {}).get("nodeName")
        phase = pod.get("status", {}).get("phase")
        if node in self.index and phase not in ("Running", "Succeeded", "Failed"):
            if time.monotonic() - self.marked.get(uid, -RUN_AGAIN_AFTER) < RUN_AGAIN_AFTER:
                return None
            return "run"
        return None

    def pod_list(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.pods.values())

    def observe(self, kind: str, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        with self.lock:
            if kind == "DELETED":
                self.pods.pop(uid, None)
                self.marked.pop(uid, None)
                self.addresses.pop(uid, None)
                return
            self.pods[uid] = pod
        self.enqueue(uid)

    def enqueue(self, uid: str) -> None:
        with self.lock:
            pod = self.pods.get(uid)
            act = self.action(uid, pod) if pod is not None else None
            if act is None or (uid, act) in self.inflight:
                return
            self.inflight.add((uid, act))
        self.work.put((uid, act))

    def worker(self) -> None:
        while True:
            uid, act = self.work.get()
            try:
                with self.lock:
                    pod = self.pods.get(uid)
                if pod is not None and act == "delete":
                    self.delete(pod)
                elif pod is not None:
                    self.run(pod)
            except Exception as error:  # noqa: BLE001 - a worker must outlive one bad write
                self.stats["errors"] += 1
                log("worker", act, uid, repr(error))
            finally:
                with self.lock:
                    self.inflight.discard((uid, act))

    def delete(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": meta["uid"]},
        }
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
        status, answer = self.api.request("DELETE", path, body)
        if status < 300:
            self.stats["deleted"] += 1
        elif status not in (404, 409):
            self.stats["errors"] += 1
            log("delete failed", path, status, str(answer)[:200])

    def run(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        uid, node = meta["uid"], pod["spec"]["nodeName"]
        index = self.index[node]
        with self.lock:
            ip = self.addresses.get(uid)
            if ip is None:
                self.next_address[node] += 1
                serial = self.next_address[node]
                ip = f"10.{64 + index // 250}.{index % 250}.{serial % 250 + 2}"
                self.addresses[uid] = ip
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status"
        status, answer = self.api.request(
            "PATCH", path, running_status(pod, index, ip), content_type=MERGE_PATCH
        )
        if status < 300:
            self.stats["running"] += 1
            with self.lock:
                self.marked[uid] = time.monotonic()
        elif status not in (404, 409):
            self.stats["errors"] += 1
            log("status failed", path, status, str(answer)[:200])

    def listed(self, items: list[dict[str, Any]]) -> None:
        """A (re)list: pods gone since are forgotten, every listed one looked at."""
        self.stats["relists"] += 1
        seen = {p["metadata"]["uid"] for p in items}
        with self.lock:
            for uid in [u for u in self.pods if u not in seen]:
                del self.pods[uid]
        for pod in items:
            self.observe("ADDED", pod)

    def follow_pods(self, stop: threading.Event) -> None:
        ListWatch(
            self.api,
            "/api/v1/pods",
            on_list=self.listed,
            on_event=self.observe,
            stop=stop,
            on_break=lambda error: log("pod watch broke:", repr(error)),
        ).run()

    def resync(self, stop: threading.Event) -> None:
        while not stop.wait(5):
            with self.lock:
                uids = list(self.pods)
            for uid in uids:
                self.enqueue(uid)

    def report(self, stop: threading.Event) -> None:
        while not stop.wait(30):
            log(f"pods {len(self.pods)} queue {self.work.qsize()} {self.stats}")

    def wait_ready(self) -> None:
        """Until every node is Ready with no taint (the scenario starts after that)."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            nodes, _ = self.api.list_all("/api/v1/nodes")
            good = [
                n
                for n in nodes
                if n["metadata"]["name"] in self.index
                and not n.get("spec", {}).get("taints")
                and any(
                    c.get("type") == "Ready" and c.get("status") == "True"
                    for c in n.get("status", {}).get("conditions") or []
                )
            ]
            if len(good) == len(self.index):
                return
            for node in nodes:
                name = node["metadata"]["name"]
                if name in self.index and node not in good:
                    self.post_status(name, self.index[name])
            time.sleep(1)
        raise RuntimeError("nodes not Ready and untainted after 120 s")


def start_usage(
    kubelets: Kubelets, seed: int, factors: Path, port: int, stop: threading.Event
) -> None:
    """The agents' stand-in (``usagefeed``): samples, NodeReports and /metrics."""
    feed = UsageFeed(
        kubelets.api,
        nodes=kubelets.index,
        node_uids=kubelets.uids,
        pods=kubelets.pod_list,
        seed=seed,
        factors=json.loads(factors.read_text(encoding="utf-8")),
        cores=float(CAPACITY["cpu"]),
        memory=quantity_to_bytes(CAPACITY["memory"]),
        allocatable=CAPACITY,
        log=log,
    )
    feed.take_sample()
    server = feed.serve(port)

    def shut_down() -> None:
        stop.wait()
        server.shutdown()

    threading.Thread(target=shut_down, daemon=True).start()
    for loop in (feed.sample_loop, feed.report_loop):
        threading.Thread(target=loop, args=(stop,), daemon=True).start()
    log(f"usage: seed {seed}, /metrics on 127.0.0.1:{port}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--token-file", type=Path, required=True)
    parser.add_argument("--ca-file", type=Path, required=True)
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--cordoned-from", type=int, default=None)
    parser.add_argument("--heartbeat", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument(
        "--usage-seed",
        type=int,
        default=None,
        help="play the agents too: actual usage from this seed, NodeReports, /metrics",
    )
    parser.add_argument(
        "--usage-factors",
        type=Path,
        help="with --usage-seed: a JSON object, Deployment (namespace/name) -> usage factor",
    )
    parser.add_argument("--metrics-port", type=int, default=0, help="with --usage-seed")
    args = parser.parse_args()
    # The token file is the API server's: "token,user,uid,groups".
    token = args.token_file.read_text(encoding="utf-8").split(",", 1)[0]
    api = Api(args.server, token, args.ca_file, connections=args.workers + 4)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    kubelets = Kubelets(api, args.nodes, args.cordoned_from, args.heartbeat)
    kubelets.create_nodes()
    for _ in range(args.workers):
        threading.Thread(target=kubelets.worker, daemon=True).start()
    for loop in (kubelets.heartbeats, kubelets.resync, kubelets.report, kubelets.follow_pods):
        threading.Thread(target=loop, args=(stop,), daemon=True).start()
    if args.usage_seed is not None:
        if args.usage_factors is None:
            parser.error("--usage-seed needs --usage-factors")
        start_usage(kubelets, args.usage_seed, args.usage_factors, args.metrics_port, stop)
    kubelets.wait_ready()
    print("ready", flush=True)
    stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
