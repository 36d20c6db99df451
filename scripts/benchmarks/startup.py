"""Benchmark: how long until a fresh node-only agent serves its facts on /metrics.

Target (foundation issue): build info plus the swap and cgroup facts within 5 s of start.
Baseline, measured in the same run: a bare interpreter start (``python -c pass``), so the
ratio shows what the agent adds on this machine.

Run: .venv/bin/python -m scripts.benchmarks.startup [--runs N] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from scripts.benchmarks.results import Results, add_output_argument
from scripts.benchmarks.timing import machine
from tests.harness.ports import free_port

REQUIRED = ("kubelet_companion_build_info", "machine_swap_bytes", "kubelet_companion_cgroup_mode")


def time_agent_start(workdir: Path) -> float:
    port = free_port()
    config = workdir / "agent.yaml"
    config.write_text(f"metricsBindAddress: 127.0.0.1:{port}\nstateDir: {workdir}\n")
    env = {**os.environ, "KUBECONFIG": "", "HOME": str(workdir), "KUBERNETES_SERVICE_HOST": ""}
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "agent.cli", "agent", "--config", str(config)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as r:
                    body = r.read().decode()
                if all(name in body for name in REQUIRED):
                    return time.perf_counter() - started
            except OSError:
                pass
            if time.perf_counter() - started > 60:
                raise RuntimeError("agent did not serve metrics within 60 s")
            time.sleep(0.01)
    finally:
        process.terminate()
        process.wait(timeout=20)


def time_interpreter_start() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    add_output_argument(parser)
    args = parser.parse_args()
    results = Results("startup", "Start-up")
    agent, baseline = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            baseline.append(time_interpreter_start())
            agent.append(time_agent_start(Path(tmp)))
    agent_median, base_median = statistics.median(agent), statistics.median(baseline)
    print(machine())
    print(
        f"agent start to facts on /metrics: median {agent_median * 1000:.0f} ms "
        f"over {args.runs} runs (target <= 5000 ms)"
    )
    print(
        f"baseline interpreter start: median {base_median * 1000:.0f} ms; "
        f"ratio {agent_median / base_median:.1f}x"
    )
    results.add(
        "facts_on_metrics",
        "process start -> build info, swap and cgroup facts on /metrics (node-only)",
        [1000 * value for value in agent],
        "ms",
        target=("<=", 5000.0),
        baseline=f"bare interpreter start {base_median * 1000:.0f} ms "
        f"({agent_median / base_median:.0f}x)",
        why_missed=f"the bare interpreter alone took {base_median * 1000:.0f} ms",
    )
    results.write(args.json)


if __name__ == "__main__":
    main()
