"""What a usage scenario adds to a run: the NodeReport CRD, a real Prometheus, the truth.

- After the control plane's reset the NodeReport CRD (``daemonset/base/nodereport-crd.yaml``,
  the product's own) is created and waited for until it is served.
- The kubelet stand-in runs with ``--usage-seed`` and a ``/metrics`` port (``usagefeed``);
  a real Prometheus (``prometheus``) scrapes it.
- Before the descheduler starts, every node must have been reported three ways since the
  layout was finished: a stand-in sample, a NodeReport written, and a Prometheus scrape. So
  every implementation starts from usage that describes the cluster it sees.
- At each of the benchmark's samples the stand-in's ``/metrics`` is read: the actual usage
  the figures are computed on (the same numbers Prometheus scrapes, without its lag).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import urllib3
import yaml

from agent.kube.resources import NODE_REPORTS
from agent.kubesemantics.timestamps import parse_rfc3339
from scripts.benchmarks.livecluster import usage
from scripts.benchmarks.livecluster.api import Api
from scripts.benchmarks.livecluster.controlplane import LOOPBACK, free_port
from scripts.benchmarks.livecluster.prometheus import Prometheus

ROOT = Path(__file__).resolve().parents[3]
CRD = ROOT / "daemonset" / "base" / "nodereport-crd.yaml"
READY_TIMEOUT = 120.0


class UsageError(RuntimeError):
    """The usage side of a run could not be brought up: no figure comes from it."""


class UsageRig:
    def __init__(self, seed: int, directory: Path, prometheus_binary: Path) -> None:
        self.seed = seed
        self.directory = directory
        self.metrics_port = free_port()
        self.prometheus = Prometheus(prometheus_binary, directory, self.metrics_port)
        self.http = urllib3.PoolManager(retries=False)

    @property
    def factors_file(self) -> Path:
        return self.directory / "usage-factors.json"

    def write_factors(self, deployments: list[str]) -> dict[str, float]:
        """The scenario's usage factors, for the stand-in (and the run's record)."""
        factors = usage.usage_factors(self.seed, deployments)
        self.factors_file.write_text(json.dumps(factors, indent=1), encoding="utf-8")
        return factors

    def kubelet_args(self) -> list[str]:
        return [
            f"--usage-seed={self.seed}",
            f"--usage-factors={self.factors_file}",
            f"--metrics-port={self.metrics_port}",
        ]

    def apply_crd(self, api: Api) -> None:
        crd = yaml.safe_load(CRD.read_text(encoding="utf-8"))
        status, answer = api.request(
            "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
        )
        if status >= 300 and status != 409:
            raise UsageError(f"creating the NodeReport CRD: {status} {str(answer)[:300]}")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if api.request("GET", NODE_REPORTS.path(), params={"limit": 1})[0] == 200:
                return
            time.sleep(0.5)
        raise UsageError("the NodeReport CRD is not served after 60 s")

    # -- the truth --------------------------------------------------------------------------

    def read(self) -> tuple[dict[str, float], float | None]:
        """The stand-in's latest sample: node -> ratio (0-1), and when it was taken."""
        try:
            answer = self.http.request(
                "GET", f"http://{LOOPBACK}:{self.metrics_port}/metrics", timeout=5
            )
        except urllib3.exceptions.HTTPError:
            return {}, None
        if answer.status != 200:
            return {}, None
        return usage.parse_exposition(answer.data.decode(errors="replace"))

    def percent(self, nodes: list[str]) -> dict[str, float] | None:
        """Each node's actual cpu (%) as the stand-in sampled it last; ``None`` when it
        could not be read."""
        ratios, taken_at = self.read()
        if taken_at is None:
            return None
        return {node: 100.0 * ratios.get(node, 0.0) for node in nodes}

    def percent_after(self, nodes: list[str], since: float) -> dict[str, float] | None:
        """The first stand-in sample taken after ``since`` (wall clock); waits for it."""
        deadline = time.monotonic() + 3 * usage.SAMPLE_SECONDS
        while time.monotonic() < deadline:
            ratios, taken_at = self.read()
            if taken_at is not None and taken_at > since:
                return {node: 100.0 * ratios.get(node, 0.0) for node in nodes}
            time.sleep(0.5)
        return None

    # -- ready to start ---------------------------------------------------------------------

    def reported_since(self, api: Api, since: float) -> int:
        """NodeReports whose status was written from a sample taken after ``since``."""
        reports, _ = api.list_all(NODE_REPORTS.path())
        count = 0
        for report in reports:
            written = (report.get("status") or {}).get("observedTime")
            try:
                count += written is not None and parse_rfc3339(written) > since
            except ValueError:
                continue
        return count

    def wait_ready(self, api: Api, nodes: int, since: float) -> dict[str, float]:
        """Until every node was sampled, reported and scraped after ``since``; how long
        each took (s)."""
        started = time.monotonic()
        took: dict[str, float] = {}
        checks: dict[str, Callable[[], bool]] = {
            "sample": lambda: (self.read()[1] or 0.0) > since,
            "reports": lambda: self.reported_since(api, since) >= nodes,
            "prometheus": lambda: self.prometheus.scraped_since(usage.METRIC, since) >= nodes,
        }
        while time.monotonic() - started < READY_TIMEOUT:
            for name, check in checks.items():
                if name not in took and check():
                    took[name] = round(time.monotonic() - started, 1)
            if len(took) == len(checks):
                return took
            time.sleep(1)
        missing = sorted(set(checks) - set(took))
        raise UsageError(
            f"not every node {' / '.join(missing)} after {READY_TIMEOUT:.0f} s; see "
            f"{self.directory}/kubelets.log and prometheus.log"
        )

    def stop(self) -> None:
        self.prometheus.stop()
