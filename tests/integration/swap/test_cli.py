"""``kubelet-companion swap report``: the real CLI process against a fixture node and the fake
API server; exit codes 0 (complete), 1 (pods unavailable, node part still printed), 2 (config)."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

from tests.harness.cgroups import GIB, MIB, ContainerFixture, container_id, pod_object
from tests.harness.cli import run_cli
from tests.harness.fake_apiserver import FakeApiServer
from tests.integration.swap.conftest import NODE, MakeSwapNode, MakeSwapNodeV1, node_object


def run_report(config: Path, *args: str) -> Any:
    return run_cli("swap", "report", "--config", str(config), *args)


def write_config(tmp_path: Path, host: Path, kubeconfig: str = "", **swap: Any) -> Path:
    document = {
        "nodeName": NODE,
        "kubeconfig": kubeconfig,
        "hostPaths": {"proc": str(host / "proc"), "sys": str(host / "sys")},
        "memorySwap": {"swapBehavior": "LimitedSwap", **swap},
    }
    path = tmp_path / "agent.yaml"
    path.write_text(json.dumps(document))
    return path


def test_report_lists_pods_containers_and_the_node(
    fake_apiserver: FakeApiServer, make_swap_node: MakeSwapNode, tmp_path: Path
) -> None:
    """--json: one row per container with expected/actual/usage/drift, then the node summary."""
    node = make_swap_node("systemd")
    fake_apiserver.create(node_object(swap_capacity=0))
    fake_apiserver.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    app = ContainerFixture("app", container_id(1), {"memory": "1Gi"}, {"memory": "2Gi"})
    pod = fake_apiserver.create(pod_object("web", "x", app, namespace="shop"))
    node.cgroups.add_container(pod["metadata"]["uid"], "burstable", container_id(1), swap_current=7)
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    result = run_report(write_config(tmp_path, node.host.root, str(kubeconfig)), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    (row,) = data["containers"]
    assert (row["namespace"], row["pod"], row["container"], row["qos"]) == (
        "shop",
        "web",
        "app",
        "Burstable",
    )
    # A tmp dir is not a cgroup2 mount, so this "node" has no cgroup v2: kubelet would give 0.
    assert (row["expected_bytes"], row["expected_reason"]) == (0, "no cgroup v2")
    assert (row["actual"], row["usage_bytes"], row["state"]) == ("max", 7, "drift")
    # kubelet reports 0 bytes (it started before swap was on): limits use its 0, and the
    # mismatch with SwapTotal is reported.
    assert (
        data["node"]["swap_capacity_bytes"],
        data["node"]["swap_capacity_source"],
        data["node"]["swap_total_bytes"],
        data["node"]["swap_capacity_mismatch"],
    ) == (0, "kubelet", 4 * 2**30, True)
    assert data["node"]["cgroup_driver"] == "systemd"
    assert any("kubelet reports 0 bytes of swap" in w for w in data["warnings"])


def test_table_output_and_node_only_mode(make_swap_node: MakeSwapNode, tmp_path: Path) -> None:
    """Without a cluster the node summary and unmapped cgroups still print, exit 0."""
    node = make_swap_node("cgroupfs")
    node.cgroups.add_container("00000000-0000-4000-8000-000000000001", "burstable", container_id(9))
    result = run_report(write_config(tmp_path, node.host.root))
    assert result.returncode == 0, result.stderr
    assert "container cgroups no pod claims: 1" in result.stdout
    assert "podsSwapAvailable" in result.stdout
    assert re.search(r"kubepods cgroup +kubepods \(cgroupfs, cgroup v2\)", result.stdout)


def test_unreachable_cluster_prints_the_node_and_exits_1(
    make_swap_node: MakeSwapNode, tmp_path: Path
) -> None:
    """Pods that cannot be listed make the report incomplete: exit 1, reason on stderr."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    node = make_swap_node("systemd")
    result = run_report(write_config(tmp_path, node.host.root, str(kubeconfig)), "--json")
    assert result.returncode == 1
    assert "cannot list this node's pods" in result.stderr
    assert json.loads(result.stdout)["node"]["swap_behavior"] == "LimitedSwap"


def test_bad_config_exits_2(tmp_path: Path) -> None:
    """An invalid memorySwap section is rejected with its path, exit 2."""
    config = tmp_path / "agent.yaml"
    config.write_text("memorySwap:\n  swapBehavior: Sometimes\n")
    result = run_report(config)
    assert result.returncode == 2
    assert "memorySwap.swapBehavior" in result.stderr


def test_report_on_cgroup_v1_lists_every_pod_with_v1_values_and_says_limited_swap_needs_v2(
    fake_apiserver: FakeApiServer, make_swap_node_v1: MakeSwapNodeV1, tmp_path: Path
) -> None:
    """On a hybrid cgroup v1 node (cgroupfs driver, kubepods in each v1 hierarchy) every pod
    and container is found, with the values v1 has (working set, swap in use from memsw),
    nothing is judged as drift, and the report says plainly that LimitedSwap needs v2."""
    node = make_swap_node_v1("cgroupfs")
    fake_apiserver.create(node_object(swap_capacity=4 * GIB))
    fake_apiserver.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    pods = {
        "web": ("burstable", ContainerFixture("app", container_id(1), {"memory": "1Gi"})),
        "db": (
            "guaranteed",
            ContainerFixture(
                "postgres",
                container_id(2),
                {"memory": "1Gi", "cpu": "1"},
                {"memory": "1Gi", "cpu": "1"},
            ),
        ),
        "batch": ("besteffort", ContainerFixture("job", container_id(3))),
    }
    for seed, (name, (qos, fixture)) in enumerate(pods.items(), start=1):
        created = fake_apiserver.create(pod_object(name, None, fixture, namespace="shop"))
        node.cgroups.add_container(
            created["metadata"]["uid"],
            qos,  # type: ignore[arg-type]
            container_id(seed),
            usage_in_bytes=seed * 100 * MIB,
            total_inactive_file=10 * MIB,
            memsw_usage=seed * 100 * MIB + seed * MIB,
        )
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    config = write_config(tmp_path, node.host.root, str(kubeconfig))

    result = run_report(config, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    rows = {row["pod"]: row for row in data["containers"]}
    assert set(rows) == {"web", "db", "batch"}
    for seed, name in enumerate(pods, start=1):
        row = rows[name]
        assert row["cgroup"] is not None
        assert row["cgroup"].startswith("memory/kubepods/")
        assert row["memory_working_set_bytes"] == seed * 100 * MIB - 10 * MIB
        assert row["usage_bytes"] == seed * MIB  # memsw usage - usage
        assert row["actual"] is None  # v1 has no memory.swap.max
        assert row["state"] == "not-compared"
    assert rows["db"]["cgroup"] == f"memory/kubepods/pod{rows['db']['pod_uid']}/{container_id(2)}"
    assert data["drifted_containers"] == 0
    assert (data["node"]["kubepods_cgroup"], data["node"]["cgroup_driver"]) == (
        "memory/kubepods",
        "cgroupfs",
    )
    assert data["node"]["kubepods_cgroup_version"] == 1
    assert data["node"]["swap_limits_compared"] is False
    assert not any("no kubepods cgroup" in warning for warning in data["warnings"])
    (v1,) = [w for w in data["warnings"] if "LimitedSwap needs cgroup v2" in w]
    assert "memory.memsw" in v1  # what is not compared, and why

    table = run_report(config)
    assert table.returncode == 0, table.stderr
    out = table.stdout
    assert "pod shop/web" in out
    assert "pod shop/db" in out
    assert "pod shop/batch" in out
    assert re.search(r"CONTAINER +KIND +QOS +REQUEST +LIMIT +WORKING SET +SWAP USED", out)
    assert "DRIFT" not in out.split("[node]")[0]
    assert re.search(r"kubepods cgroup +memory/kubepods \(cgroupfs, cgroup v1\)", out)
    assert "LimitedSwap needs cgroup v2" in out
