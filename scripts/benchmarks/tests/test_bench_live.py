"""The live benchmark without its binaries: the measurement rules on hand-made records, and
its figures rendered from sample runs (the benchmark itself never runs in CI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scripts.benchmarks import live, render
from scripts.benchmarks.livecluster import binaries, controlplane, measures, workload

D, C = measures.Deletion, measures.Creation


# -- replacements ------------------------------------------------------------------------------


def test_each_eviction_takes_the_first_later_pod_of_its_own_replicaset() -> None:
    """Per owner, in time order: two evictions of one ReplicaSet take its two new pods in
    turn; a pod of another ReplicaSet, or one created before the eviction, is not theirs."""
    deletions = [D(1.0, "ns/a1", "u-a1", "n1", "ns/RS/a"), D(2.0, "ns/a2", "u-a2", "n2", "ns/RS/a")]
    creations = [
        C(0.5, "ns/a0", "c-early", "ns/RS/a"),
        C(1.2, "ns/b1", "c-b", "ns/RS/b"),
        C(1.3, "ns/a3", "c-1", "ns/RS/a"),
        C(2.4, "ns/a4", "c-2", "ns/RS/a"),
    ]
    matched = measures.match_replacements(deletions, creations)
    assert {k: v.uid for k, v in matched.items()} == {"u-a1": "c-1", "u-a2": "c-2"}


def test_a_replacement_seen_a_moment_before_its_eviction_still_matches() -> None:
    """The watch can show the ReplicaSet's new pod just before the old pod's
    deletionTimestamp; within the slack it is still that eviction's replacement."""
    matched = measures.match_replacements(
        [D(5.0, "ns/a", "u", "n1", "o")], [C(4.98, "ns/b", "c", "o")]
    )
    assert matched["u"].uid == "c"


@pytest.mark.parametrize(
    ("bound_to", "created", "count"),
    [
        pytest.param("n1", 3.0, 1, id="same-node-within-10s"),
        pytest.param("n2", 3.0, 0, id="another-node"),
        pytest.param("n1", 12.5, 0, id="same-node-but-later-than-10s"),
    ],
)
def test_same_node_returns(bound_to: str, created: float, count: int) -> None:
    """An eviction moved nothing when its replacement, made within 10 s, was first bound to
    the node the evicted pod left."""
    deletions = [D(2.0, "ns/a", "u", "n1", "o")]
    matched = measures.match_replacements(deletions, [C(created, "ns/b", "c", "o")])
    assert measures.same_node_returns(deletions, matched, {"c": bound_to}, 10.0) == count


def test_evictions_in_the_last_minute_of_the_run() -> None:
    deletions = [D(t, f"ns/p{t}", f"u{t}", "n", "o") for t in (1.0, 89.9, 90.0, 90.1, 149.0)]
    assert measures.evictions_between(deletions, 150 - 60, 150) == 2


def test_first_time_the_count_is_zero() -> None:
    assert measures.first_time([(0.0, 3), (1.0, 1), (2.0, 0), (3.0, 1)]) == 2.0
    assert measures.first_time([(0.0, 3), (1.0, 1)]) is None


# -- utilization -------------------------------------------------------------------------------


def test_terminating_and_finished_pods_free_their_node() -> None:
    pods = [
        measures.PodState("n1", 2000),
        measures.PodState("n1", 4000, deleting=True),
        measures.PodState("n2", 1000, phase="Succeeded"),
        measures.PodState(None, 500, phase="Pending"),
    ]
    assert measures.cpu_percent(pods, {"n1": 8000, "n2": 8000}) == {"n1": 25.0, "n2": 0.0}


def test_spread_counts_nodes_out_of_band_and_occupied_cold_ones() -> None:
    s = measures.spread({"a": 0.0, "b": 10.0, "c": 30.0, "d": 60.0}, low=20, high=50)
    assert (s.over, s.under, s.under_occupied, s.empty, s.hottest) == (1, 2, 1, 1, 60.0)
    assert s.stddev == pytest.approx(22.91, abs=0.01)


def test_cpu_quantities() -> None:
    assert [measures.cpu_milli(q) for q in ("250m", "2", 0.5, None)] == [250, 2000, 500, 0]


# -- the plan against the real placements --------------------------------------------------------


def test_plan_outcome_with_destination_candidates() -> None:
    """Each planned eviction that happened is followed to where its replacement was bound:
    on the destination, on one of the candidates, or elsewhere; a pod never evicted live is
    not counted, nor is one whose replacement was never bound."""
    plan: list[dict[str, Any]] = [
        {"pod": "ns/a", "destination": "n1", "destinationCandidates": ["n1", "n2"]},
        {"pod": "ns/b", "destination": "n1", "destinationCandidates": ["n1", "n2"]},
        {"pod": "ns/c", "destination": "n3", "destinationCandidates": ["n3"]},
        {"pod": "ns/d", "destination": None, "blockedByPDB": True, "destinationCandidates": []},
        {"pod": "ns/never", "destination": "n1", "destinationCandidates": ["n1"]},
        {"pod": "ns/unbound", "destination": "n1", "destinationCandidates": ["n1"]},
    ]
    deletions = [
        D(1.0, "ns/a", "ua", "n9", "o"),
        D(1.1, "ns/b", "ub", "n9", "o"),
        D(1.2, "ns/c", "uc", "n9", "o"),
        D(1.3, "ns/d", "ud", "n9", "o"),
        D(1.4, "ns/unbound", "uu", "n9", "o"),
    ]
    creations = [C(1.5 + i / 10, f"ns/r{i}", f"r{i}", "o") for i in range(5)]
    matched = measures.match_replacements(deletions, creations)
    bound = {"r0": "n1", "r1": "n2", "r2": "n4", "r3": "n5"}
    outcome = measures.plan_outcome(plan, deletions, matched, bound, nodes=10)
    assert (outcome.planned, outcome.allowed, outcome.evicted, outcome.placed) == (6, 5, 5, 4)
    assert (outcome.on_destination, outcome.on_candidates, outcome.predicted) == (1, 2, 3)
    assert outcome.candidates_field
    assert outcome.candidate_share == 50.0
    assert outcome.mean_candidates_share == pytest.approx(100 * (2 + 2 + 1 + 0) / 4 / 10)


def test_one_owners_replacements_are_paired_with_its_evictions_at_best() -> None:
    """A ReplicaSet's replacements are alike: two evictions predicted on n1 and n2 whose
    replacements, in creation order, landed on n2 then n1 are both on a candidate per owner
    (a maximum matching), though neither is in the strict time-order pairing; another
    owner's replacement never stands in."""
    plan: list[dict[str, Any]] = [
        {"pod": "ns/a", "destination": "n1", "destinationCandidates": ["n1"]},
        {"pod": "ns/b", "destination": "n2", "destinationCandidates": ["n2"]},
        {"pod": "ns/c", "destination": "n3", "destinationCandidates": ["n3"]},
    ]
    deletions = [D(1.0, "ns/a", "ua", "n9", "o"), D(1.1, "ns/b", "ub", "n9", "o")]
    deletions.append(D(1.2, "ns/c", "uc", "n9", "other"))
    creations = [C(1.5, "ns/r0", "r0", "o"), C(1.6, "ns/r1", "r1", "o")]
    creations.append(C(1.7, "ns/r2", "r2", "other"))
    matched = measures.match_replacements(deletions, creations)
    bound = {"r0": "n2", "r1": "n1", "r2": "n1"}
    outcome = measures.plan_outcome(plan, deletions, matched, bound, nodes=10)
    assert (outcome.on_candidates, outcome.on_candidates_by_owner) == (0, 2)
    assert outcome.owner_candidate_share == pytest.approx(200 / 3)
    assert measures.matching_size([["n1", "n2"], ["n1"]], ["n1", "n2"]) == 2
    assert measures.matching_size([["n1"], ["n1"]], ["n1", "n2"]) == 1


def test_an_eviction_the_plan_refused_is_not_its_prediction() -> None:
    """A pod the plan refused (``held: false``: not sent in the planned cycle) that a later
    cycle evicts is counted apart, not as a prediction missed."""
    plan: list[dict[str, Any]] = [
        {"pod": "ns/a", "destination": "n1", "destinationCandidates": ["n1"]},
        {"pod": "ns/b", "blockedByPDB": True, "held": False, "destinationCandidates": []},
    ]
    deletions = [D(1.0, "ns/a", "ua", "n9", "o"), D(20.0, "ns/b", "ub", "n9", "o")]
    creations = [C(1.5, "ns/r0", "r0", "o"), C(20.5, "ns/r1", "r1", "o")]
    matched = measures.match_replacements(deletions, creations)
    outcome = measures.plan_outcome(plan, deletions, matched, {"r0": "n1", "r1": "n2"}, nodes=4)
    assert (outcome.evicted, outcome.placed, outcome.refused_evicted) == (1, 1, 1)
    assert outcome.owner_candidate_share == 100.0


def test_a_plan_without_candidates_falls_back_to_its_destination() -> None:
    entry = {"pod": "ns/a", "destination": "n1"}
    assert measures.candidates_of(entry) == ["n1"]
    assert measures.candidates_of({"pod": "ns/a", "destination": None}) == []
    deletions = [D(1.0, "ns/a", "ua", "n9", "o")]
    matched = measures.match_replacements(deletions, [C(1.1, "ns/r", "r", "o")])
    outcome = measures.plan_outcome([entry], deletions, matched, {"r": "n1"}, nodes=40)
    assert not outcome.candidates_field
    assert (outcome.candidate_share, outcome.destination_share) == (100.0, 100.0)
    assert outcome.mean_candidates_share == 2.5


# -- layout and control plane --------------------------------------------------------------------


def test_workload_is_seeded_and_fills_to_its_target() -> None:
    first = workload.generate(7, 12, 14 * 8000, 0.78)
    again = workload.generate(7, 12, 14 * 8000, 0.78)
    assert first == again
    total = sum(d.cpu_total for d in first)
    assert abs(total / (14 * 8000) - 0.78) <= workload.TOLERANCE
    assert all(20 <= d.replicas <= 40 for d in first)
    assert [d.budget for d in first[:4]] == [True, False, False, True]


def test_the_packing_scheduler_scores_most_allocated() -> None:
    config = controlplane.scheduler_config(Path("/k"), "MostAllocated")
    fit = config["profiles"][0]["pluginConfig"][0]
    assert fit["args"]["scoringStrategy"]["type"] == "MostAllocated"
    assert (
        "pluginConfig"
        not in controlplane.scheduler_config(Path("/k"), "LeastAllocated")["profiles"][0]
    )
    with pytest.raises(ValueError, match="scoring"):
        controlplane.scheduler_config(Path("/k"), "Random")


def test_missing_binaries_are_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without the control plane's binaries the benchmark skips, saying which are missing."""
    monkeypatch.setenv("KUBE_BIN_DIR", str(tmp_path))
    found, why = binaries.find()
    assert found is None
    assert "kube-apiserver" in why
    assert str(tmp_path) in why


# -- figures and rendering -----------------------------------------------------------------------


def _run(impl: str, **over: Any) -> dict[str, Any]:
    end = {"over": 0, "under": 0, "under_occupied": 0, "empty": 0, "stddev": 3.0, "hottest": 32.5}
    start = {"over": 14, "under": 26, "under_occupied": 0, "empty": 26, "stddev": 36.6,
             "hottest": 82.0}  # fmt: skip
    record = {
        "scenario": "reference",
        "implementation": impl,
        "duration_s": 150.0,
        "evictions": 232,
        "evictions_last_60s": 0,
        "first_eviction_s": 0.2,
        "last_eviction_s": 44.7,
        "owners_touched": 12,
        "time_to_target_s": 27.0,
        "same_node_returns": 0,
        "start": start,
        "end": end,
        "deployments_whole": True,
        "deployments_not_whole": [],
        "setup_s": 15.0,
        "pods": 386,
        "plan": {
            "planned": 269,
            "allowed": 171,
            "evicted": 200,
            "placed": 200,
            "predicted": 150,
            "on_destination": 6,
            "on_candidates": 6,
            "on_candidates_by_owner": 8,
            "owner_candidate_share": 4.0,
            "candidates_field": False,
            "candidate_share": 3.0,
            "destination_share": 3.0,
            "mean_candidates_share": 1.9,
        },
    }
    record.update(over)
    return record


def _emit(ours: list[dict[str, Any]], upstream: list[dict[str, Any]]) -> dict[str, Any]:
    live.RESULTS = live.Results("live", "Live loop on a real control plane")
    emitter = live.Emitter(live.SCENARIOS["reference"], {"ours": ours, "upstream": upstream})
    emitter.emit()
    live.RESULTS.tables.append(emitter.table())
    return {**live.RESULTS.to_json(), "quick": False}


def test_targets_are_computed_against_upstreams_figures_of_the_same_run() -> None:
    ours = [
        _run("ours", time_to_target_s=12.0, evictions_last_60s=5, same_node_returns=1),
        _run("ours", time_to_target_s=14.0, evictions_last_60s=7, same_node_returns=1),
    ]
    upstream = [_run("upstream", time_to_target_s=25.0), _run("upstream", time_to_target_s=30.0)]
    data = _emit(ours, upstream)
    figures = {f["key"]: f for f in data["figures"]}
    balance = figures["reference_time_to_balance"]
    assert (balance["value"], balance["target"]["limit"], balance["status"]) == (13.0, 13.8, "met")
    assert balance["baseline"] == "upstream: 27.5 s (25-30)"
    assert figures["reference_evictions_last_60s"]["status"] == "missed"
    assert figures["reference_same_node_returns"]["status"] == "missed"
    assert figures["reference_deployments_whole"]["status"] == "met"
    assert figures["reference_stddev_end"]["target"]["limit"] == 3.0
    assert figures["reference_plan_candidates"]["status"] == "missed"
    assert "no destinationCandidates yet" in figures["reference_plan_candidates"]["note"]
    assert figures["reference_plan_candidate_set"]["status"] == "met"


def test_a_run_that_never_balances_counts_as_its_length_and_says_so() -> None:
    data = _emit([_run("ours", time_to_target_s=None)], [_run("upstream")])
    balance = next(f for f in data["figures"] if f["key"] == "reference_time_to_balance")
    assert balance["value"] == 150.0
    assert balance["status"] == "missed"
    assert "never reached in 1 run(s)" in balance["reason"]
    row = next(r for r in data["tables"][0]["rows"] if r[0].startswith("time until"))
    assert row[1] == "150 s, never in 1"


def test_without_upstream_ours_has_no_relative_target() -> None:
    data = _emit([_run("ours")], [])
    figures = {f["key"]: f for f in data["figures"]}
    assert figures["reference_time_to_balance"]["target"] is None
    assert figures["reference_time_to_balance"]["baseline"].startswith("upstream not run")
    assert figures["reference_evictions_last_60s"]["status"] == "met"
    assert data["tables"][0]["columns"][2] == "upstream (not run)"


def test_live_results_render_with_the_side_by_side_table() -> None:
    data = _emit([_run("ours", time_to_target_s=5.0)], [_run("upstream")])
    text = render.render({"live": data})
    section = text.split("## Live loop on a real control plane", 1)[1]
    assert (
        "| reference: time until no node is over 50 % cpu | 5.00 s | — | 1 runs | ≤ 13.5 s | met"
        in (section)
    )
    assert "| std. dev. of node cpu % at start / end | 36.6 / 3 | 36.6 / 3 |" in section
    assert "| plan: evictions planned / not blocked | 269 / 171 | 269 / 171 |" in section
    assert "What counts here is whether the under-utilized nodes are emptied" in section
    summary = text.split("## Every target", 1)[1].split("\n## ", 1)[0]
    assert "reference: replacements back on the node they left" in summary


# -- usage scenarios, kept runs --------------------------------------------------------------------


def test_scenarios_may_each_name_their_own_number_of_runs() -> None:
    assert live.parse_scenarios("reference,usage:2, usage-wide:3,", 1) == [
        ("reference", 1),
        ("usage", 2),
        ("usage-wide", 3),
    ]


def _usage_run(
    impl: str, time_s: float | None, evictions: int, cycles: list[int]
) -> dict[str, Any]:
    spread = {"over": 0, "under": 26, "under_occupied": 0, "empty": 14, "stddev": 20.0,
              "hottest": 49.0, "coldest": 0.0}  # fmt: skip
    return _run(
        impl,
        scenario="usage",
        evictions=evictions,
        evictions_last_60s=1,
        plan=None,
        exit="stopped" if cycles else 2,
        log={"usage_errors": 0, "prometheus_errors": 0, "tail": ["error: no such flag"]},
        cycles=[{"t": 15.0 * i, "evictions": n, "nodes": ["n1"]} for i, n in enumerate(cycles)],
        rollout={
            "peak_pct": 12.5,
            "peak_deployment": "bench-1/app-01",
            "peak_outstanding": 3,
            "peak_replicas": 24,
            "peak_t": 2.0,
            "within": True,
            "over_budget": [],
            "evictions_seen": evictions,
            "plain_deletions": 0,
        },
        usage={
            "start": {**spread, "over": 5, "stddev": 23.6},
            "end": spread,
            "time_to_target_s": time_s,
            "evictions": evictions,
        },
    )


def _shadowed(run: dict[str, Any], exit_status: int | str, ours: list[list[str]]) -> dict[str, Any]:
    """An upstream run with ours as its dry-run shadow: upstream's cycles from its ``cycles``,
    ours' 1.5 s after each, with the nodes given."""
    return {
        **run,
        "shadow": {
            "exit": exit_status,
            "log_tail": ["error: no such flag"] if exit_status != "stopped" else [],
            "upstream_cycles": [
                {"t": c["t"], "nodes": c["nodes"] * c["evictions"]} for c in run["cycles"]
            ],
            "ours_cycles": [{"t": 15.0 * i + 1.5, "nodes": n} for i, n in enumerate(ours)],
            "writes": {"none": True},
        },
    }


def test_usage_targets_are_upstreams_figures_and_ours_on_prometheus_is_paired_per_cycle() -> None:
    """On a usage scenario ours on NodeReports is held to half upstream's time to balance
    on actual cpu and to no more evictions; ours as upstream's dry-run shadow is paired
    cycle by cycle with upstream (the largest difference, the share of upstream's (cycle,
    node) evictions ours planned too, the misses named); a shadow that failed to start says
    why; the table has a column for each implementation and each run's rollout peak."""
    upstream = _usage_run("upstream", 60.0, 15, [4, 4, 3, 2, 2])
    by_impl = {
        "ours": [_usage_run("ours", 10.0, 13, [9, 4])],
        "upstream": [
            _shadowed(
                upstream, "stopped", [["n1"] * 4, ["n1"] * 3, ["n1"] * 3, ["n2"], ["n1"] * 2]
            ),
            _shadowed(upstream, 2, []),
        ],
    }
    live.RESULTS = live.Results("live", "Live loop on a real control plane")
    emitter = live.Emitter(live.SCENARIOS["usage"], by_impl)
    emitter.emit()
    figures = {f.key: f for f in live.RESULTS.figures}
    balance = figures["usage_usage_time_to_balance"]
    assert (balance.value, balance.target.limit if balance.target else None) == (10.0, 30.0)
    assert figures["usage_usage_evictions"].status == "met"
    assert "usage_evictions" not in figures  # the requests-scenario figure is not repeated
    parity_figure = figures["usage_prometheus_cycle_difference"]
    assert (parity_figure.low, parity_figure.high) == (1.0, 4.0)
    assert parity_figure.status == "missed"
    assert "exit 2: error: no such flag" in parity_figure.reason
    nodes = figures["usage_prometheus_cycle_nodes"]
    assert (nodes.low, nodes.high) == (0.0, 80.0)
    assert "cycle 4: n1, cycle 4: n1" in nodes.reason
    assert figures["usage_rollout_peak"].status == "met"
    table = emitter.table()
    assert table["columns"][1:] == ["ours on NodeReports", "upstream v0.36.0 on Prometheus"]
    rows = {row[0]: row[1:] for row in table["rows"]}
    assert rows["time until no node over 50 % actual cpu"] == ["10 s", "60 s"]
    assert rows["evictions per cycle (per run)"] == ["9, 4", "4, 4, 3, 2, 2; 4, 4, 3, 2, 2"]
    shadow_row = next(v for k, v in rows.items() if k.startswith("ours on Prometheus as"))
    assert shadow_row == ["—", "4, 3, 3, 1, 2 / 4, 4, 3, 2, 2; 0, 0, 0, 0, 0 / 4, 4, 3, 2, 2"]
    assert rows["rollout: peak per run (Deployment; within 25 %?)"][0] == "12.5 % app-01 (yes)"


def test_kept_runs_are_read_back_by_scenario_and_implementation_in_run_order(
    tmp_path: Path,
) -> None:
    """``--records`` reads the run.json of each kept run directory, run 2 after run 1."""
    for name, impl, index, evictions in (
        ("usage", "ours", 2, 20),
        ("usage", "ours", 1, 10),
        ("usage", "upstream", 1, 30),
        ("reference", "ours", 1, 40),
    ):
        run = tmp_path / f"{name}-{impl}-{index}"
        run.mkdir()
        (run / "policy.yaml").write_text("", encoding="utf-8")
        record = {"scenario": name, "implementation": impl, "evictions": evictions,
                  "setup_s": 30.0, "load_average": {"start": [1.5], "end": [1.0]}}  # fmt: skip
        (run / "run.json").write_text(json.dumps(record), encoding="utf-8")
    records = live.load_records(tmp_path)
    assert list(records) == ["reference", "usage"]
    assert [r["evictions"] for r in records["usage"]["ours"]] == [10, 20]
    assert live.RESULTS.load_start == [1.5]
