"""Benchmark: one full swap audit of 250 containers.

Target (swap issue): a full audit of 250 containers takes <= 50 ms median. "Full" is what the
controller does each cycle: read /proc/meminfo and /proc/swaps (psutil), read the kernel
sysctls, walk the kubepods tree (no-symlink fd walk, two files per container), compute every
container's kubelet limit and compare. The tree is a fixture on this machine's disk, laid out
like the systemd driver's, with 100 pods (Guaranteed, Burstable, BestEffort).

Baseline, measured in the same run: plainly reading the same 500 cgroup files with
``Path.read_text`` (the unavoidable I/O), so the ratio shows what the audit adds.

Run: .venv/bin/python -m scripts.benchmarks.swap [--runs N] [--containers N] [--json FILE]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from typing import Any

from agent.config.swap import MemorySwapConfig  # after the path set-up above
from agent.node.cgroups import CgroupFacts, CgroupMode
from agent.node.containercgroups import KubepodsTree
from agent.node.kernel import read_kernel
from agent.node.memory import read_memory
from agent.node.paths import HostPaths
from agent.node.tmpfs import NoswapSupport
from agent.swap.audit import AuditReport, build_report
from agent.swap.summary import node_summary
from scripts.benchmarks.results import Results, add_output_argument
from scripts.benchmarks.timing import machine, wall_times
from tests.harness.cgroups import (
    QOS,
    CgroupTreeBuilder,
    ContainerFixture,
    container_id,
    pod_object,
)

CONFIG = MemorySwapConfig(swap_behavior="LimitedSwap")
CGROUPS = CgroupFacts(mode=CgroupMode.V2, swap_controller=True, own_cgroup="/")
NOSWAP = NoswapSupport(True, "kernel >= 6.4")


def build_node(root: Path, containers: int) -> tuple[HostPaths, list[dict[str, Any]], list[Path]]:
    """A kubepods tree with ``containers`` containers spread over pods of every QoS class."""
    paths = HostPaths(proc=Path("/proc"), sys=root / "sys")
    tree = CgroupTreeBuilder(paths.cgroup_root, "systemd")
    tree.system_slice()
    pods: list[dict[str, Any]] = []
    files: list[Path] = []
    placements: list[tuple[QOS, dict[str, str], dict[str, str]]] = [
        ("burstable", {"memory": "1Gi"}, {"memory": "2Gi"}),
        ("guaranteed", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}),
        ("besteffort", {}, {}),
        ("burstable", {"memory": "256Mi"}, {}),
    ]
    seed = 0
    pod_number = 0
    while seed < containers:
        qos, requests, limits = placements[pod_number % len(placements)]
        uid = f"{pod_number:08x}-0000-4000-8000-{pod_number:012x}"
        fixtures = []
        for _ in range(min(3, containers - seed)):
            seed += 1
            cid = container_id(seed)
            fixtures.append(ContainerFixture(f"c{seed}", cid, requests, limits))
            scope = tree.add_container(uid, qos, cid, swap_max="max" if seed % 7 else "0")
            files += [scope / "memory.swap.max", scope / "memory.swap.current"]
        pods.append(pod_object(f"pod-{pod_number}", uid, *fixtures))
        pod_number += 1
    return paths, pods, files


def full_audit(paths: HostPaths, pods: list[dict[str, Any]]) -> AuditReport:
    memory = read_memory(paths)
    read_kernel(paths)
    scan = KubepodsTree(paths.cgroup_root).scan()
    summary = node_summary(
        CONFIG, memory=memory, cgroups=CGROUPS, noswap=NOSWAP, scan=scan, page_size=4096
    )
    return build_report(summary, pods, scan)


def read_files(files: list[Path]) -> int:
    return sum(len(path.read_text()) for path in files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=51)
    parser.add_argument("--containers", type=int, default=250)
    add_output_argument(parser)
    args = parser.parse_args()
    results = Results("swap", "Swap audit")
    with tempfile.TemporaryDirectory(prefix="kc-bench-swap-") as tmp:
        paths, pods, files = build_node(Path(tmp), args.containers)
        report = full_audit(paths, pods)  # warm-up, and a check that the audit saw them all
        mapped = sum(1 for row in report.containers if row.cgroup is not None)
        if mapped != args.containers:
            raise SystemExit(f"audit mapped {mapped} containers, expected {args.containers}")
        audit = wall_times(args.runs, lambda: full_audit(paths, pods))
        baseline = wall_times(args.runs, lambda: read_files(files))
    audit_median, base_median = statistics.median(audit), statistics.median(baseline)
    print(machine())
    print(
        f"full swap audit of {args.containers} containers ({len(pods)} pods, "
        f"{len(report.drifted)} drifted): median {audit_median * 1000:.2f} ms over {args.runs} "
        f"runs, p90 {sorted(audit)[int(len(audit) * 0.9)] * 1000:.2f} ms (target <= 50 ms)"
    )
    print(
        f"baseline plain read of the same {len(files)} cgroup files: median "
        f"{base_median * 1000:.2f} ms; ratio {audit_median / base_median:.1f}x"
    )
    results.add(
        "full_audit",
        f"one full audit, {args.containers} containers ({len(pods)} pods), fixture kubepods "
        "tree on disk",
        [1000 * value for value in audit],
        "ms",
        target=("<=", 50.0),
        baseline=f"plain read of the same {len(files)} cgroup files: {base_median * 1000:.2f} ms "
        f"({audit_median / base_median:.1f}x)",
        why_missed=f"the plain reads alone took {base_median * 1000:.2f} ms",
    )
    results.write(args.json)


if __name__ == "__main__":
    main()
