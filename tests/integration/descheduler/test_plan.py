"""``descheduler plan`` against the live loop: the shipped sample snapshot, loaded into the fake
API server, gives the same evictions offline as a ``--dry-run`` of the live loop online; and
the 1,000-node parity state plans a destination for every eviction."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.cli import main
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.repository import REPO

SAMPLE = REPO / "examples" / "snapshot.json.gz"
SAMPLE_POLICY = REPO / "examples" / "policy.yaml"
PARITY = REPO / "tests" / "fixtures" / "descheduler"
KINDS_IN_ORDER = (
    "Namespace",
    "PriorityClass",
    "Node",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "Pod",
    "PodDisruptionBudget",
)
RESOURCES = {
    "Namespace": "namespaces",
    "PriorityClass": "priorityclasses",
    "Node": "nodes",
    "Deployment": "deployments.apps",
    "ReplicaSet": "replicasets.apps",
    "StatefulSet": "statefulsets.apps",
    "Pod": "pods",
    "PodDisruptionBudget": "poddisruptionbudgets",
}


def _sample_items() -> list[dict[str, Any]]:
    with gzip.open(SAMPLE) as stream:
        items: list[dict[str, Any]] = json.load(stream)["items"]
    return items


def _load_into(server: FakeApiServer, items: list[dict[str, Any]]) -> None:
    """The snapshot's objects, created as kubectl would re-create them (what the fresh
    server already holds, the system namespaces and priority classes, is left as it is),
    controllers first: each object's owner references are re-pointed to the UIDs the server
    gave its owners."""
    uids: dict[str, str] = {}
    for kind in KINDS_IN_ORDER:
        objects = []
        for item in items:
            if item["kind"] != kind:
                continue
            namespace = item["metadata"].get("namespace")
            if server.exists(RESOURCES[kind], item["metadata"]["name"], namespace):
                continue
            obj = json.loads(json.dumps(item))
            old = obj["metadata"].pop("uid", None)
            for ref in obj["metadata"].get("ownerReferences") or ():
                ref["uid"] = uids.get(ref["uid"], ref["uid"])
            objects.append((old, obj))
        server.seed([obj for _, obj in objects])
        for old, obj in objects:
            metadata = obj["metadata"]
            created = server.get(RESOURCES[kind], metadata["name"], metadata.get("namespace"))
            uids[old] = created["metadata"]["uid"]


def _without_destination(plan: dict[str, Any]) -> list[dict[str, Any]]:
    placement = {"destination", "destinationCandidates"}
    return [{k: v for k, v in e.items() if k not in placement} for e in plan["evictions"]]


def test_plan_on_the_sample_matches_the_live_dry_run(
    fake_apiserver: FakeApiServer, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sample's objects in the fake API server: ``--dry-run --output json`` of the live
    loop and ``plan`` on the file list the same evictions, in the same order, with the same
    PDB verdicts and summary; only ``plan`` fills in destinations."""
    _load_into(fake_apiserver, _sample_items())
    live_code = main(
        [
            "descheduler",
            "--policy-config-file", str(SAMPLE_POLICY),
            "--kubeconfig", str(kubeconfig),
            "--dry-run", "--output", "json",
            "--metrics-bind-address", "127.0.0.1:0",
        ]
    )  # fmt: skip
    live = json.loads(capsys.readouterr().out)
    offline_code = main(
        [
            "descheduler", "plan",
            "--snapshot", str(SAMPLE),
            "--policy-config-file", str(SAMPLE_POLICY),
            "--output", "json",
        ]
    )  # fmt: skip
    offline = json.loads(capsys.readouterr().out)
    assert (live_code, offline_code) == (0, 0)
    assert _without_destination(offline) == _without_destination(live)
    assert offline["summary"] == live["summary"]
    assert offline["nodes"] == live["nodes"]
    assert live["summary"]["allowed"] > 10
    assert live["summary"]["blockedByPDB"] > 0
    assert {e["destination"] for e in live["evictions"]} == {None}
    assert all(e["destination"] in e["destinationCandidates"] for e in offline["evictions"])
    assert not [r for r in fake_apiserver.requests(method="POST") if "eviction" in r.path]


def test_sample_destinations_respect_taints_cordons_and_affinity(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On the sample, no pod is sent to the GPU or edge node (tainted, and emptiest) or the
    cordoned one, the zone-a-only cart pods land in zone-a, the checkout pod evicted for its
    anti-affinity lands on a node without checkout, and no pod lands where it was."""
    items = _sample_items()
    zones = {
        i["metadata"]["name"]: i["metadata"]["labels"]["topology.kubernetes.io/zone"]
        for i in items
        if i["kind"] == "Node"
    }
    argv = ["descheduler", "plan", "--snapshot", str(SAMPLE), "--policy-config-file"]
    assert main([*argv, str(SAMPLE_POLICY), "--output", "json"]) == 0
    evictions = json.loads(capsys.readouterr().out)["evictions"]
    placed = [e for e in evictions if e["destination"] is not None]
    assert placed
    assert not {e["destination"] for e in placed} & {"node-gpu1", "node-edge1", "node-c1"}
    carts = [e for e in placed if e["pod"].startswith("shop/cart-")]
    assert carts
    assert {zones[e["destination"]] for e in carts} == {"zone-a"}
    assert all(e["destination"] != e["node"] for e in placed)
    checkout_nodes = {
        i["spec"]["nodeName"]
        for i in items
        if i["kind"] == "Pod" and i["metadata"]["name"].startswith("checkout-")
    }
    [checkout] = [e for e in placed if e["pod"].startswith("shop/checkout-")]
    assert checkout["plugin"] == "RemovePodsViolatingInterPodAntiAffinity"
    assert checkout["destination"] not in checkout_nodes  # one checkout per node


def test_plan_table_on_the_sample(capsys: pytest.CaptureFixture[str]) -> None:
    """The table shows the evictions with destinations, every node's requests before and
    after as bars, and the summary."""
    argv = ["descheduler", "plan", "--snapshot", str(SAMPLE), "--policy-config-file"]
    assert main([*argv, str(SAMPLE_POLICY)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == [
        "POD",
        "NODE",
        "PLUGIN",
        "REASON",
        "BLOCKED-BY-PDB",
        "DESTINATION",
    ]
    assert any(line.startswith("node-a1 ") and "% -> [" in line for line in lines)
    assert "held by a PodDisruptionBudget (sent as it allows)" in out
    assert "destinations: " in out


def test_plan_on_the_1k_node_parity_state_places_every_eviction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``plan`` on the 1,000-node, 30,024-pod parity state (converted to the gzipped kubectl
    List a user would dump) plans every eviction with a destination. What it costs (peak
    RSS, time) is a benchmark figure: scripts/benchmarks/descheduler_plan.py."""
    with gzip.open(PARITY / "cluster-1k.json.gz") as stream:
        state = json.load(stream)
    state["metadata"] = {"resourceVersion": ""}  # as kubectl prints it; gzipped as users send
    snapshot = tmp_path / "cluster-1k.json.gz"
    snapshot.write_bytes(gzip.compress(json.dumps(state).encode(), compresslevel=1))
    del state
    code = main(
        [
            "descheduler", "plan",
            "--snapshot", str(snapshot),
            "--policy-config-file", str(PARITY / "policy-lnu-dup.yaml"),
            "--output", "json",
        ]
    )  # fmt: skip
    assert code == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["summary"]["allowed"] > 9000
    assert all(e["destination"] is not None for e in plan["evictions"])


def test_the_documented_excerpt_is_real_output(capsys: pytest.CaptureFixture[str]) -> None:
    """Every line docs/plan.md shows of ``plan`` on the sample (besides the "…" elisions) is
    a line the command prints today, so the excerpt cannot drift from the product."""
    page = (REPO / "docs" / "plan.md").read_text()
    start = page.index("```\nPOD ", page.index("## Offline plan")) + 4
    excerpt = page[start : page.index("```\n", start)].splitlines()
    argv = ["descheduler", "plan", "--snapshot", str(SAMPLE), "--policy-config-file"]
    assert main([*argv, str(SAMPLE_POLICY)]) == 0
    printed = set(capsys.readouterr().out.splitlines())
    assert len(excerpt) > 10
    assert [line for line in excerpt if line != "…" and line not in printed] == []


def test_the_shipped_sample_is_what_its_script_writes(tmp_path: Path) -> None:
    """``scripts/sample_snapshot.py`` writes the committed sample byte for byte (the script
    is deterministic, and the file was not edited by hand)."""
    out = tmp_path / "snapshot.json.gz"
    command = [sys.executable, "-m", "scripts.sample_snapshot", "--out", str(out)]
    subprocess.run(command, cwd=REPO, check=True)
    assert out.read_bytes() == SAMPLE.read_bytes()
