"""The usage scenario's pure parts: usage factors, a node's sample, the exposition and its
reading, eviction cycles and their parity, the in-cluster shim's refusal, and the scenarios
a partial run carries over."""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path

import pytest

from scripts.benchmarks.livecluster import carryover, incluster, measures, parity, usage

D = measures.Deletion


# -- usage factors and samples -------------------------------------------------------------------


def test_usage_factors_are_seeded_with_an_exact_hot_share() -> None:
    """The same seed and Deployments give the same factors in any order; 35 % of them
    (rounded) are hot, within 1.5-2.5x their requests, the rest within 0.2-0.5x; another
    seed gives other factors."""
    names = [f"ns-{i % 3}/app-{i:02d}" for i in range(12)]
    factors = usage.usage_factors(7, names)
    assert factors == usage.usage_factors(7, reversed(names))
    hot = [f for f in factors.values() if f > 1]
    assert len(hot) == round(usage.HOT_SHARE * 12) == 4
    assert all(usage.HOT[0] <= f <= usage.HOT[1] for f in hot)
    assert all(usage.COLD[0] <= f <= usage.COLD[1] for f in factors.values() if f <= 1)
    assert usage.usage_factors(8, names) != factors


def _load(uid: str, node: str, deployment: str, cpu: float) -> usage.PodLoad:
    return usage.PodLoad(uid, node, deployment, cpu, 256 * 2**20)


def test_a_sample_is_requests_times_the_deployments_factor_times_noise() -> None:
    """A replacement (another pod of the same Deployment) gets its Deployment's factor; the
    noise multiplies each pod's figure; a node with no pod uses nothing."""
    factors = {"ns/hot": 2.0, "ns/cold": 0.25}
    sampled = usage.sample(
        [
            _load("a", "n1", "ns/hot", 0.5),
            _load("b", "n1", "ns/cold", 1.0),
            _load("c", "n2", "ns/hot", 0.5),
        ],
        ["n1", "n2", "n3"],
        cores=8,
        factor=factors.__getitem__,
        noise=lambda: 0.1,
    )
    assert sampled["n1"].pods["a"][0] == pytest.approx(1.1)
    assert sampled["n1"].pods["b"][0] == pytest.approx(0.275)
    assert sampled["n2"].pods["c"][0] == pytest.approx(1.1)
    assert sampled["n1"].cpu == pytest.approx(1.375)
    assert sampled["n1"].ratio == pytest.approx(1.375 / 8)
    assert sampled["n1"].memory == 2 * 256 * 2**20
    assert (sampled["n3"].cpu, sampled["n3"].pods) == (0.0, {})


def test_a_node_is_capped_at_its_cores_and_its_pods_throttled_alike() -> None:
    """Pods wanting 12 cores on an 8-core node get 8 between them, each scaled by 8/12, so
    the pods still sum to the node."""
    sampled = usage.sample(
        [_load("a", "n1", "ns/x", 3.0), _load("b", "n1", "ns/x", 3.0)],
        ["n1"],
        cores=8,
        factor=lambda _name: 2.0,
        noise=lambda: 0.0,
    )
    node = sampled["n1"]
    assert (node.demand, node.cpu, node.ratio) == (12.0, 8.0, 1.0)
    assert node.pods["a"][0] == pytest.approx(4.0)
    assert sum(cpu for cpu, _ in node.pods.values()) == pytest.approx(node.cpu)


def test_noise_stays_within_its_spread() -> None:
    noise = usage.uniform_noise(7)
    draws = [noise() for _ in range(500)]
    assert all(-usage.NOISE <= d <= usage.NOISE for d in draws)
    assert min(draws) < 0 < max(draws)


def test_the_exposition_reads_back() -> None:
    """What the stand-in serves is what the benchmark reads: each node's ratio under
    ``instance``, and the sample's time; other lines are skipped."""
    sampled = usage.sample(
        [_load("a", "node-00001", "ns/x", 2.0)],
        ["node-00000", "node-00001"],
        cores=8,
        factor=lambda _name: 1.0,
        noise=lambda: 0.0,
    )
    text = usage.exposition(sampled, 1_700_000_000.5)
    assert f'{usage.METRIC}{{instance="node-00001"}} 0.2500' in text
    text += 'other_metric{instance="node-00001"} 9\nbroken{instance="x"} NaN\n'
    ratios, taken_at = usage.parse_exposition(text)
    assert ratios == {"node-00000": 0.0, "node-00001": 0.25}
    assert taken_at == 1_700_000_000.5


def test_the_exposition_refuses_a_node_name_it_would_have_to_escape() -> None:
    sampled = usage.sample([], ['bad"name'], cores=8, factor=lambda _n: 1.0, noise=lambda: 0.0)
    with pytest.raises(ValueError, match="plain label value"):
        usage.exposition(sampled, 0.0)


# -- cycles and parity ---------------------------------------------------------------------------


def test_evictions_are_grouped_into_cycles_by_the_quiet_between_them() -> None:
    deletions = [
        D(t, f"ns/p{i}", f"u{i}", node, "o")
        for i, (t, node) in enumerate(
            [(0.4, "n1"), (0.9, "n2"), (1.2, "n1"), (15.3, "n3"), (19.0, "n1"), (40.0, None)]
        )
    ]
    cycles = measures.eviction_cycles(deletions, gap=5.0)
    assert [(c.t, c.evictions, c.nodes) for c in cycles] == [
        (0.4, 3, ("n1", "n2")),
        (15.3, 2, ("n1", "n3")),
        (40.0, 1, ()),
    ]


UPSTREAM_LOG = "\n".join(
    f"I1128 20:47:{second} 6969 {where}] {text}"
    for second, where, text in (
        ("29.208551", "lownodeutilization.go:231", '"Node has been classified" node="n9"'),
        ("29.237157", "evictions.go:589", '"Evicted pod" pod="b/p1" reason="" node="n2"'),
        ("29.292989", "evictions.go:589", '"Evicted pod" pod="b/p2" reason="" node="n1"'),
        ("29.339697", "descheduler.go:252", '"Number of evictions/requests" totalEvicted=2'),
        ("44.275692", "descheduler.go:252", '"Number of evictions/requests" totalEvicted=0'),
        ("59.208256", "evictions.go:589", '"Evicted pod" pod="b/p3" reason="" node="n1"'),
        ("59.309757", "descheduler.go:252", '"Number of evictions/requests" totalEvicted=1'),
    )
)


def test_upstreams_cycles_are_read_from_its_log_each_closed_by_its_count_line() -> None:
    """Each cycle of upstream's log ends at its ``Number of evictions/requests`` line (a
    cycle that evicted nothing counts too), with the nodes of its ``Evicted pod`` lines, at
    the line's klog time from the run's start."""
    origin = time.mktime((2026, 11, 28, 20, 47, 28, 0, 0, -1))
    cycles = parity.upstream_cycles(UPSTREAM_LOG, origin)
    assert [(c.t, c.nodes) for c in cycles] == [
        (1.34, ("n1", "n2")),
        (16.28, ()),
        (31.31, ("n1",)),
    ]
    new_year = time.mktime((2027, 1, 1, 0, 0, 5, 0, 0, -1))
    stamp = parity.klog_time("I1231 23:59:58.500000 1 x.go:1] late", new_year)
    assert stamp is not None
    assert round(stamp - new_year, 1) == -6.5


def test_ours_dry_run_plans_are_read_one_document_at_a_time() -> None:
    """Ours prints one indented JSON plan per cycle, back to back: every complete one is
    read with the offset past it, an incomplete tail waits; a budget's refusal (blocked, not
    held) is not counted as an eviction of the cycle, a held one is."""
    plan = {
        "evictions": [
            {"node": "n2", "blockedByPDB": False, "held": False},
            {"node": "n1", "blockedByPDB": True, "held": True},
            {"node": "n3", "blockedByPDB": True, "held": False},
        ]
    }
    text = json.dumps(plan, indent=2) + "\n" + json.dumps({"evictions": []}, indent=2) + '\n{"ev'
    found = list(parity.json_documents(text))
    assert len(found) == 2
    assert text[found[-1][1] :].strip() == '{"ev'
    assert parity.ours_cycle(found[0][0], 3.456) == parity.Cycle(3.46, ("n1", "n2"))


def _cycle(t: float, *nodes: str) -> parity.Cycle:
    return parity.Cycle(t, tuple(sorted(nodes)))


def test_each_upstream_cycle_is_paired_with_ours_nearest_and_every_cycles_nodes_count() -> None:
    """Each upstream cycle is paired with ours' cycle nearest to it, within half the
    interval, each of ours once (ours may plan a moment before upstream's cycle ends); the
    figures are the largest per-pair difference and the share of
    upstream's (cycle, node) evictions ours planned in the pair, the misses named; an
    upstream cycle ours has no cycle for counts as ours planning nothing."""
    upstream = [_cycle(0.3, "a", "b", "c", "d"), _cycle(15.3, "a", "e"), _cycle(30.3, "b")]
    ours = [_cycle(1.8, "a", "b", "c", "d"), _cycle(16.8, "a", "f", "g"), _cycle(31.9)]
    found = parity.compare(upstream, ours, window=7.5)
    assert (found.cycles, found.largest_difference, found.unpaired) == (3, 1, 0)
    assert found.same_nodes == 100.0 * 5 / 7
    assert found.misses == ("cycle 2: e", "cycle 3: b")
    assert (found.ours, found.upstream, found.median_lag) == ((4, 3, 0), (4, 2, 1), 1.5)
    assert found.within
    late = parity.compare(upstream, [_cycle(40.0, "b")], window=7.5)
    # 9.7 s after upstream's last cycle is more than half an interval: no pair at all.
    assert (late.unpaired, late.largest_difference, late.ours) == (3, 4, (0, 0, 0))
    assert not late.within
    # Ours a moment before upstream's stamp (its end) pairs with that cycle, not the next.
    early = parity.compare(
        upstream, [_cycle(0.29, "a", "b", "c", "d"), _cycle(15.29, "a", "e")], window=7.5
    )
    assert (early.ours, early.upstream, early.unpaired) == ((4, 2, 0), (4, 2, 1), 1)
    assert early.median_lag == -0.01
    assert parity.compare([_cycle(0.3)], [], window=7.5).same_nodes is None
    assert parity.describe_counts([]) == "none"
    assert parity.describe_counts([1] * 14, limit=3) == "1, 1, 1 ... (14 cycles)"


def test_log_findings_count_upstreams_usage_errors_and_keep_the_last_lines() -> None:
    text = (
        "I1 started\n"
        "E1 error initializing usage client: prometheus client not initialized\n"
        "\n"
        "E2 failed to query Prometheus: connection refused\n"
        "usage: kubelet-companion descheduler [-h] ...\n"
    )
    found = measures.log_findings(text, tail_lines=2)
    assert (found["usage_errors"], found["prometheus_errors"]) == (1, 2)
    assert found["tail"] == [
        "E2 failed to query Prometheus: connection refused",
        "usage: kubelet-companion descheduler [-h] ...",
    ]


# -- the in-cluster shim ------------------------------------------------------------------------


def _shim_argv(stand_in: Path) -> list[str]:
    return [f"--stand-in={stand_in}", "--host=127.0.0.1", "--port=6443", "--outside=mnt:[1]"]


def test_the_shim_mounts_nothing_in_the_callers_own_mount_namespace(tmp_path: Path) -> None:
    """Run where it was wrapped (same mount namespace), or where the namespace cannot be
    read, it refuses with exit 2 before any mount or directory is made."""
    mounts: list[tuple[str, ...]] = []
    executed: list[str] = []
    argv = _shim_argv(tmp_path)
    for inside in ("mnt:[1]", ""):
        status = incluster.main(
            [*argv, "--", "true"],
            mount=lambda *args: mounts.append(args),
            make_dir=lambda path: mounts.append(("mkdir", str(path))),
            namespace=functools.partial(str, inside),
            execute=lambda path, _args, _env: executed.append(path),
        )
        assert status == 2
    assert mounts == []
    assert executed == []


def test_in_its_own_mount_namespace_the_shim_mounts_the_stand_in_then_runs(
    tmp_path: Path,
) -> None:
    """Inside a namespace other than the caller's: a tmpfs where the service-account path
    stops existing, the path made on it, the stand-in bound there, then the command."""
    steps: list[tuple[str, ...]] = []
    status = incluster.main(
        [*_shim_argv(tmp_path), "--", "descheduler", "--v=2"],
        mount=lambda *args: steps.append(("mount", *args)),
        make_dir=lambda path: steps.append(("mkdir", str(path))),
        namespace=lambda: "mnt:[2]",
        execute=lambda path, args, env: steps.append(
            ("exec", path, *args, env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"])
        ),
    )
    target = incluster.SERVICE_ACCOUNT.resolve()
    base = incluster.mount_point(target)
    assert status == 0
    assert steps[-1] == ("exec", "descheduler", "descheduler", "--v=2", "127.0.0.1", "6443")
    assert steps[-2] == ("mount", "--bind", str(tmp_path), str(target))
    if base != target:
        tmpfs = ("mount", "-t", "tmpfs", "-o", "mode=0755", "livebench-incluster", str(base))
        assert steps[0] == tmpfs
        assert steps[1] == ("mkdir", str(target))


def test_the_shim_wraps_the_command_with_a_private_mount_namespace(tmp_path: Path) -> None:
    """The stand-in directory holds a token, the API server's CA and a namespace; the
    wrapped command names the caller's mount namespace for the shim to compare."""
    ca = tmp_path / "apiserver.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n", encoding="utf-8")
    stand_in = incluster.stand_in(tmp_path / "sa", ca)
    assert sorted(p.name for p in stand_in.iterdir()) == ["ca.crt", "namespace", "token"]
    assert (stand_in / "ca.crt").read_text(encoding="utf-8") == ca.read_text(encoding="utf-8")
    command = incluster.wrap(["descheduler", "--v=2"], stand_in_dir=stand_in, host="h", port=1)
    assert command[:4] == ["unshare", "--mount", "--propagation", "private"]
    assert f"--outside={incluster.mount_namespace()}" in command
    assert command[-3:] == ["--", "descheduler", "--v=2"]
    assert incluster.mount_point(Path("/nonexistent-dir/a/b")) == Path("/")


# -- carried scenarios --------------------------------------------------------------------------


def test_scenarios_a_run_left_out_keep_their_figures_marked_with_their_date() -> None:
    """Figures and tables of scenarios not rerun are carried, noted with the run that
    measured them (once, however often carried); those rerun, and unknown ones, are not.
    ``usage`` and ``usage-wide`` are told apart."""
    names = ["reference", "usage", "usage-wide"]
    previous = {
        "date": "2026-11-27 19:56 UTC",
        "figures": [
            {"key": "reference_time_to_balance", "note": ""},
            {"key": "usage_evictions", "note": "never reached"},
            {"key": "usage-wide_evictions", "note": "from the run of 2026-11-20 10:00 UTC"},
            {"key": "gone_evictions", "note": ""},
        ],
        "tables": [
            {"title": "reference: 40 nodes: ours beside upstream's"},
            {"title": "usage-wide: 60 nodes (from the run of 2026-11-20 10:00 UTC)"},
            {"title": "usage: 40 nodes: ours beside upstream's"},
        ],
    }
    figures, tables, kept = carryover.carried(previous, ["usage"], names)
    assert [(f["key"], f["note"]) for f in figures] == [
        ("reference_time_to_balance", "from the run of 2026-11-27 19:56 UTC"),
        ("usage-wide_evictions", "from the run of 2026-11-20 10:00 UTC"),
    ]
    assert [t["title"] for t in tables] == [
        "reference: 40 nodes: ours beside upstream's (from the run of 2026-11-27 19:56 UTC)",
        "usage-wide: 60 nodes (from the run of 2026-11-20 10:00 UTC)",
    ]
    assert kept == ["reference", "usage-wide"]
    assert carryover.carried(None, [], names) == ([], [], [])
    assert carryover.scenario_of("usage-wide_x", names) == "usage-wide"
