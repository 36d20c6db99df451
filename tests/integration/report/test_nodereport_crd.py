"""The NodeReport CRD: valid for Kubernetes, a schema for every field we write, and printer
columns that `kubectl get nodereports` shows."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.node.nodeusage import NodeCounters
from agent.node.podusage import PodScan
from agent.report.document import Capacity, Identity, build_status
from agent.report.usage import Sample, Usage, UsageTracker
from agent.runtime.status import BoardSnapshot, ReadinessStatus, ShutdownStatus, SwapStatus
from tests.harness.cgroups import pod_object
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.nodereport import CRD_PATH, register_crd

JSON = dict[str, Any]


def _crd() -> JSON:
    return dict(yaml.safe_load(CRD_PATH.read_text()))


def test_crd_validates_with_kubernetes_validate() -> None:
    """The manifest is a valid apiextensions.k8s.io/v1 CustomResourceDefinition (strict)."""
    kubernetes_validate = pytest.importorskip(
        "kubernetes_validate", reason="kubernetes-validate is in the test extras"
    )
    version = kubernetes_validate.latest_version()
    try:
        kubernetes_validate.validate(_crd(), version, strict=True)
    except kubernetes_validate.SchemaNotFoundError as error:  # pragma: no cover - offline
        pytest.skip(f"no CRD schema for {version} bundled with kubernetes-validate: {error}")
    crd = _crd()
    (served,) = crd["spec"]["versions"]
    assert crd["metadata"]["name"] == "nodereports.kubelet-companion.io"
    assert crd["spec"]["scope"] == "Cluster"
    assert served["name"] == "v1alpha1"
    assert served["subresources"] == {"status": {}}


def _closed(schema: Any) -> Any:
    """The schema with unknown properties forbidden everywhere, so a field we write without a
    schema entry fails (the real server would silently prune it)."""
    if isinstance(schema, dict):
        closed = {key: _closed(value) for key, value in schema.items()}
        if "properties" in schema and "additionalProperties" not in schema:
            closed["additionalProperties"] = False
        return closed
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    return schema


def _full_status() -> JSON:
    """A status with every optional section present (pods, pressure, gate, shutdown, swap)."""
    node = NodeCounters(4, 100, 400, 16 * 2**30, 8 * 2**30, 2**30, 2**29, {"cpu": {"some": 1.0}})
    tracker = UsageTracker()
    uid = "0a0b0c0d-0000-4000-8000-000000000001"
    tracker.add(Sample(0, node, PodScan(2, None, {})))
    tracker.add(Sample(5, node, PodScan(2, None, {})))
    tracker.pods_smoothed[uid] = Usage(0.25, 2**28, 0)
    board = BoardSnapshot(
        readiness=ReadinessStatus(True, ("pod:kube-system/cni",)),
        shutdown=ShutdownStatus("inProgress", 1.79e9, 0, 1.79e9 + 30),
        swap=SwapStatus("LimitedSwap", True, True, ("web/web-0/app",)),
    )
    return build_status(
        identity=Identity("0.1.0", "boot", 60),
        capacity=Capacity(4, 16 * 2**30, 2**30),
        tracker=tracker,
        board=board,
        observed_time=1.79e9,
        node={"status": {"allocatable": {"cpu": "3900m", "memory": "15Gi"}}},
        pods=[pod_object("web-0", uid)],
        agent_stopped=True,
    )


def test_every_field_we_write_has_a_schema() -> None:
    """The status the agent builds validates against the CRD's OpenAPI schema with unknown
    fields forbidden: nothing would be pruned by the API server."""
    jsonschema = pytest.importorskip("jsonschema", reason="comes with kubernetes-validate")
    schema = _closed(_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    status = _full_status()
    assert all(status[key] for key in ("pods", "readiness", "swap", "allocatable"))
    jsonschema.validate({"apiVersion": "x", "kind": "NodeReport", "status": status}, schema)
    status["usage"]["unknownField"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"status": status}, schema)


def _serve_report(server: FakeApiServer) -> None:
    register_crd(server)
    server.create(
        {
            "apiVersion": "kubelet-companion.io/v1alpha1",
            "kind": "NodeReport",
            "metadata": {"name": "node-1"},
        }
    )
    server.patch(
        "nodereports",
        "node-1",
        {"status": _full_status()},
        patch_type="merge",
        subresource="status",
    )


def test_kubectl_get_nodereports_prints_the_printer_columns(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """The real kubectl prints CPU %, memory %, swap used, gate, shutdown and the report's age
    from the CRD's printer columns (the fake serves server-side Tables as the real one does)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    _serve_report(fake_apiserver)
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    result = subprocess.run(
        [kubectl, "--kubeconfig", str(kubeconfig), "get", "nodereports"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    header, row = result.stdout.splitlines()
    assert header.split() == ["NAME", "CPU", "MEMORY", "SWAP", "GATE", "SHUTDOWN", "REPORTED"]
    name, cpu, memory, swap, gate, shutdown, age = row.split()
    assert (name, cpu, memory, swap, gate, shutdown) == (
        "node-1",
        "0",
        "50",
        "536870912",
        "true",
        "inProgress",
    )
    assert age.endswith(("d", "h", "m", "s"))


def test_table_columns_follow_the_crd(fake_apiserver: FakeApiServer) -> None:
    """Without kubectl too: a Table request gets the CRD's columns, cells read by JSONPath."""
    _serve_report(fake_apiserver)
    client = fake_apiserver.api_client()
    response = client.call_api(
        "GET",
        f"{client.configuration.host}/apis/kubelet-companion.io/v1alpha1/nodereports",
        header_params={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
    )
    table = json.loads(response.read())
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "CPU",
        "Memory",
        "Swap",
        "Gate",
        "Shutdown",
        "Reported",
    ]
    (row,) = table["rows"]
    assert row["cells"][:6] == ["node-1", 0, 50, 536870912, True, "inProgress"]
