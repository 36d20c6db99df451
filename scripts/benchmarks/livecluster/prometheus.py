"""A real Prometheus scraping the kubelet stand-in's ``/metrics``, for a usage scenario.

Upstream's descheduler reads actual usage from Prometheus (``metricsProviders``), so the
usage scenario runs a real one: Debian's ``prometheus`` (``$PROMETHEUS`` overrides), on a
free loopback port, its TSDB in the run's directory, scraping every 5 s with
``honor_labels`` (the exposition's own ``instance="<node>"`` is kept, not replaced by the
scrape target's). Without the binary the usage scenarios are skipped, with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import urllib3

from scripts.benchmarks.livecluster.controlplane import LOOPBACK, STOP_SECONDS, free_port
from tests.harness.childprocess import stop_process

SCRAPE_SECONDS = 5


def find() -> tuple[Path | None, str]:
    """The binary, or ``None`` and why not (one line)."""
    candidate = os.environ.get("PROMETHEUS") or shutil.which("prometheus")
    if candidate and os.access(candidate, os.X_OK):
        return Path(candidate), ""
    return None, "no prometheus binary (Debian's prometheus, or $PROMETHEUS)"


def config(target_port: int) -> str:
    """The configuration: one job scraping the stand-in (JSON is YAML)."""
    return json.dumps(
        {
            "global": {
                "scrape_interval": f"{SCRAPE_SECONDS}s",
                "evaluation_interval": f"{SCRAPE_SECONDS}s",
                "scrape_timeout": f"{SCRAPE_SECONDS - 1}s",
            },
            "scrape_configs": [
                {
                    "job_name": "kubelets",
                    "honor_labels": True,
                    "static_configs": [{"targets": [f"{LOOPBACK}:{target_port}"]}],
                }
            ],
        },
        indent=1,
    )


class PrometheusError(RuntimeError):
    pass


class Prometheus:
    def __init__(self, binary: Path, directory: Path, target_port: int) -> None:
        self.binary = binary
        self.directory = directory
        self.target_port = target_port
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.http = urllib3.PoolManager(retries=False)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        data = self.directory / "prometheus-data"
        shutil.rmtree(data, ignore_errors=True)
        configuration = self.directory / "prometheus.yml"
        configuration.write_text(config(self.target_port), encoding="utf-8")
        self.port = free_port()
        with (self.directory / "prometheus.log").open("wb") as log:
            self.process = subprocess.Popen(
                [
                    str(self.binary),
                    f"--config.file={configuration}",
                    f"--storage.tsdb.path={data}",
                    f"--web.listen-address={LOOPBACK}:{self.port}",
                    "--storage.tsdb.retention.time=1d",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise PrometheusError(
                    f"prometheus exited with {self.process.returncode}; see "
                    f"{self.directory / 'prometheus.log'}"
                )
            try:
                if self.http.request("GET", f"{self.url}/-/ready", timeout=2).status == 200:
                    return
            except urllib3.exceptions.HTTPError:
                pass
            time.sleep(0.5)
        raise PrometheusError(f"prometheus not ready in 60 s; see {self.directory}")

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query's result vector (empty when it failed)."""
        try:
            answer = self.http.request(
                "GET", f"{self.url}/api/v1/query", fields={"query": promql}, timeout=5
            )
            body = json.loads(answer.data)
        except (urllib3.exceptions.HTTPError, ValueError):
            return []
        if answer.status != 200 or body.get("status") != "success":
            return []
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def scraped_since(self, metric: str, since: float) -> int:
        """How many series of ``metric`` were scraped after ``since`` (wall clock)."""
        return sum(
            1 for series in self.query(f"timestamp({metric})") if float(series["value"][1]) > since
        )

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            stop_process(process, STOP_SECONDS)
