"""Benchmark: parsing a pod list as raw JSON versus the official client's typed models.

Why the adapter reads lists and watches with ``_preload_content=False`` and ``json.loads``:
the client's models (``V1PodList`` and friends) are much slower to build. Baseline, measured
in the same run: ``json.loads`` of the same bytes, which is what ``agent/kube`` does.

Run: .venv/bin/python -m scripts.benchmarks.kube_json [--pods N] [--runs N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from typing import Any

from kubernetes import client

from scripts.benchmarks.results import Results, add_output_argument
from tests.harness import kubeobjects
from tests.harness.kubeobjects import condition, container, container_status, owner_ref


def pod(index: int) -> dict[str, Any]:
    """Pod ``index`` of a ReplicaSet ``web``, two containers, as an item of a PodList."""
    name = f"web-{index:05d}"
    built = kubeobjects.pod(
        name,
        "node-1",
        namespace="shop",
        uid=f"6f1c1e5d-5a4d-4e7e-9d3c-{index:012d}",
        created="2026-11-22T09:00:00Z",
        labels={"app": "web", "pod-template-hash": "7d9f"},
        owner=owner_ref("ReplicaSet", "web-7d9f", uid="0b6f1c1e-5d5a-4d7e-9d3c-5b1f1c1e5d5a"),
        containers=[
            container(
                "app",
                "registry.example/web:1.0",
                cpu="100m",
                memory="256Mi",
                limits={"memory": "512Mi"},
                fields={"ports": [{"containerPort": 8080, "protocol": "TCP"}]},
            ),
            container("sidecar", "registry.example/proxy:2.1", cpu="50m", memory="64Mi"),
        ],
        priority=0,
        grace_seconds=30,
        tolerations=[
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
        ],
        phase="Running",
        conditions=[
            condition(kind, lastTransitionTime="2026-11-22T09:00:05Z")
            for kind in ("Ready", "ContainersReady")
        ],
        container_statuses=[
            container_status(
                name_,
                container_id=f"containerd://{index:064x}",
                fields={
                    "restartCount": 0,
                    "image": "x",
                    "imageID": "y",
                    "started": True,
                    "state": {"running": {"startedAt": "2026-11-22T09:00:02Z"}},
                },
            )
            for name_ in ("app", "sidecar")
        ],
        start_time="2026-11-22T09:00:01Z",
        metadata={"resourceVersion": str(1000 + index)},
        status={"qosClass": "Burstable"},
    )
    return {k: v for k, v in built.items() if k not in {"apiVersion", "kind"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    add_output_argument(parser)
    args = parser.parse_args()
    results = Results("kube_json", "Raw JSON versus typed models")
    body = json.dumps(
        {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "99"},
            "items": [pod(i) for i in range(args.pods)],
        }
    )
    api = client.ApiClient()
    raw, typed = [], []
    for _ in range(args.runs):
        started = time.perf_counter()
        parsed = json.loads(body)
        raw.append(time.perf_counter() - started)
        started = time.perf_counter()
        models = api.deserialize(body, "V1PodList", "application/json")
        typed.append(time.perf_counter() - started)
        if not len(parsed["items"]) == len(models.items) == args.pods:
            raise RuntimeError("the two parses disagree on the pod count")
    raw_median, typed_median = statistics.median(raw), statistics.median(typed)
    print(
        f"machine: {platform.machine()}, Python {platform.python_version()}, "
        f"kubernetes client {client.__version__ if hasattr(client, '__version__') else '?'}"
    )
    print(f"{args.pods} pods, {len(body) / 2**20:.1f} MiB of JSON, {args.runs} runs")
    print(f"raw json.loads (baseline): median {raw_median * 1000:.1f} ms")
    print(
        f"typed V1PodList:           median {typed_median * 1000:.1f} ms "
        f"({typed_median / raw_median:.1f}x the raw parse)"
    )
    version = getattr(client, "__version__", "?")
    results.add(
        "typed_list",
        f"a {args.pods}-pod list ({len(body) / 2**20:.1f} MiB) into V1PodList, kubernetes "
        f"client {version}",
        [1000 * value for value in typed],
        "ms",
        baseline=f"json.loads of the same bytes: {raw_median * 1000:.1f} ms (the typed path is "
        f"{typed_median / raw_median:.1f}x slower)",
    )
    results.write(args.json)


if __name__ == "__main__":
    main()
