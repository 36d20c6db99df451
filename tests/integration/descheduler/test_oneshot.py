"""One cycle end to end: the upstream README policy, the eviction API, PDBs and metrics."""

from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from structlog.testing import capture_logs

from agent.kube.api import KubeApi
from agent.telemetry.metrics import new_registry
from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.livedescheduler import run_live
from tests.integration.descheduler.conftest import README_REMOVE_DUPLICATES, duplicates_cluster


def _evictions(server: FakeApiServer) -> list[str]:
    return [
        request.path.split("/")[-2]
        for request in server.requests(method="POST")
        if request.path.endswith("/eviction")
    ]


async def test_one_cycle_evicts_duplicates_but_not_pdb_protected_pods(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, policy_file: Path
) -> None:
    """The README's RemoveDuplicates policy evicts the 2 surplus web pods through the eviction
    API, posts Descheduled events, leaves the PDB-protected db pods alone (the budget never
    allows them within the short hold), and exits 0."""
    duplicates_cluster(fake_apiserver)
    code = await run_live(policy_file, kube_api, held_eviction_timeout=0.2)
    assert code == 0
    evicted = _evictions(fake_apiserver)
    assert sorted(evicted) == ["web-1", "web-2"]
    events = fake_apiserver.list("events", "default")
    assert sorted(e["involvedObject"]["name"] for e in events if e["reason"] == "Descheduled") == [
        "web-1",
        "web-2",
    ]
    assert all(fake_apiserver.exists("pods", f"db-{i}", "default") for i in range(3))


async def test_metrics_count_evicted_and_blocked(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, policy_file: Path
) -> None:
    """``descheduler_pods_evicted_total`` counts the successes and the pods a budget still
    refused when the hold ended."""
    duplicates_cluster(fake_apiserver)
    registry = new_registry("descheduler")
    await run_live(policy_file, kube_api, held_eviction_timeout=0.2, registry=registry)
    counts: dict[tuple[str, str, str], float] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            if sample.name == "descheduler_pods_evicted_total":
                key = (sample.labels["result"], sample.labels["strategy"], sample.labels["node"])
                counts[key] = counts.get(key, 0) + sample.value
    assert counts == {
        ("success", "RemoveDuplicates", "n1"): 2,
        ("blocked by PodDisruptionBudget", "RemoveDuplicates", "n2"): 2,
    }


async def test_limit_refusals_are_counted_with_the_limit_text(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, tmp_path: Path
) -> None:
    """With one eviction allowed per node, the second surplus pod is not sent and is counted
    under the limit's own text, as upstream does."""
    duplicates_cluster(fake_apiserver, protected=False)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text("maxNoOfPodsToEvictPerNode: 1\n" + README_REMOVE_DUPLICATES)
    registry = new_registry("descheduler")
    await run_live(policy_file, kube_api, registry=registry)
    results: dict[str, float] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            if sample.name == "descheduler_pods_evicted_total" and sample.labels["node"] == "n1":
                results[sample.labels["result"]] = sample.value
    assert results.pop("success") == 1
    assert list(results.values()) == [1]
    assert "node" in next(iter(results)).lower()
    assert len(_evictions(fake_apiserver)) == 2  # one web pod on n1, one db pod on n2


async def test_each_cycle_logs_one_summary_line(
    fake_apiserver: FakeApiServer, kube_api: KubeApi, policy_file: Path
) -> None:
    """A cycle ends with one info line a person reads: evictions by profile and plugin, what
    a budget still refused, what failed, how long it took (no next cycle for a one-shot run)."""
    duplicates_cluster(fake_apiserver)
    with capture_logs() as logs:
        await run_live(policy_file, kube_api, held_eviction_timeout=0.2)
    (line,) = [e for e in logs if e["event"] == "descheduling cycle done"]
    assert line["log_level"] == "info"
    assert line["evicted"] == {"ProfileName/RemoveDuplicates": 2}
    assert (line["blocked"], line["failed"], line["plugin_errors"]) == (2, 0, 0)
    assert line["seconds"] >= 0
    assert line["next_cycle_in"] is None
