"""``descheduler plan`` on hostile input: a plan with exit 0 (distrusted reports named on
stderr), or a message with exit 2; a plugin that fails is exit 1; never a traceback, never
exit 0 with a silently shortened plan."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from agent.cli import main
from agent.descheduler.core.plugins.removeduplicates import RemoveDuplicates
from tests.harness.deschedulerstate import node, pdb, pod
from tests.harness.fifo import fed_fifo
from tests.harness.kubeobjects import list_document, node_report, owner_ref

CREATED = "2026-11-01T10:00:30Z"
LNU_ON_REPORTS = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: LowNodeUtilization
    args:
      thresholds: {cpu: 20, memory: 20, pods: 20}
      targetThresholds: {cpu: 50, memory: 50, pods: 50}
      metricsUtilization: {source: NodeReports}
  plugins:
    balance:
      enabled: [LowNodeUtilization]
"""
DUPLICATES = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  plugins:
    balance:
      enabled: [RemoveDuplicates]
"""


def _report(name: str, observed: str = "2026-11-01T10:00:00Z", **status: Any) -> dict[str, Any]:
    return node_report(name, observed, **{"usage": {"cpu": 0.4, "memory": 2**30}, **status})


def _cluster() -> list[dict[str, Any]]:
    """A hot 4-core node (4 pods, 12 % of its cpu requested) and three idle ones."""
    hot = node("hot")
    hot["metadata"]["creationTimestamp"] = CREATED
    items: list[dict[str, Any]] = [hot, node("idle-1"), node("idle-2"), node("idle-3")]
    items += [
        pod(f"web-{i}", "hot", cpu="120m", owner=owner_ref("ReplicaSet", f"rs-{i}"))
        for i in range(4)
    ]
    return items


def _plan(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    items: list[dict[str, Any]] | None = None,
    *,
    policy: str = LNU_ON_REPORTS,
    raw: bytes | None = None,
    extra: tuple[str, ...] = (),
) -> tuple[int, Any, str]:
    """Run ``descheduler plan --output json``; return the code, the plan (or None), stderr."""
    snapshot = tmp_path / "snapshot.json"
    if raw is None:
        raw = json.dumps(list_document(*(items or []))).encode()
    snapshot.write_bytes(raw)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(policy)
    argv = ["descheduler", "plan", "--snapshot", str(snapshot)]
    code = main([*argv, "--policy-config-file", str(policy_file), "--output", "json", *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, json.loads(captured.out) if captured.out else None, captured.err


def _sources(plan: Any) -> dict[str, str]:
    return {facts["node"]: facts["usageSource"] for facts in plan["nodes"]}


class TestDistrustedReportsStillGiveAPlan:
    def test_an_honest_report_is_used(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The baseline: an owned, plausible, current report is the node's usage."""
        code, plan, err = _plan(tmp_path, capsys, [*_cluster(), _report("hot")])
        assert (code, _sources(plan)["hot"], plan["evictions"]) == (0, "NodeReports", [])
        assert "not believed" not in err

    @pytest.mark.parametrize(
        ("report", "reason"),
        [
            pytest.param({**_report("hot"), "metadata": {"name": "hot"}}, "not-owned", id="forged"),
            pytest.param(
                _report("hot")
                | {
                    "metadata": {
                        "name": "hot",
                        "ownerReferences": [
                            {
                                "apiVersion": "v1",
                                "kind": "Node",
                                "name": "idle-1",
                                "uid": "uid-idle-1",
                            }
                        ],
                    }
                },
                "not-owned",
                id="foreign-owned",
            ),
            pytest.param(_report("hot", "2099-01-01T00:00:00Z"), "future-timestamp", id="future"),
            pytest.param(
                _report("hot", usage={"cpu": 1_000_000, "memory": 2**30}),
                "implausible",
                id="a-million-cores",
            ),
            pytest.param(
                _report("hot", usage={"cpu": 1e306, "memory": 2**30}), "invalid", id="1e306"
            ),
        ],
    )
    def test_a_report_not_believed_is_named_and_its_node_falls_back_to_requests(
        self,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        report: dict[str, Any],
        reason: str,
    ) -> None:
        """The plan is made on requests for that node (12 %: nothing evicted), exit 0, and
        stderr names the report and why it was not believed."""
        code, plan, err = _plan(tmp_path, capsys, [*_cluster(), report])
        assert code == 0
        assert _sources(plan)["hot"] == "requests"
        assert plan["evictions"] == []
        assert f"NodeReport hot not believed ({reason})" in err


class TestRefusedWithExit2:
    @pytest.mark.parametrize(
        ("change", "expected"),
        [
            pytest.param(
                {"cpu": "1e400"},
                "items[4].spec.containers[0].resources.requests.cpu: not a quantity",
                id="1e400",
            ),
            pytest.param(
                {"cpu": "-4"},
                "items[4].spec.containers[0].resources.requests.cpu: negative quantity",
                id="negative",
            ),
            pytest.param(
                {"start_time": "next tuesday"},
                "items[4].status.startTime: not an RFC 3339 timestamp",
                id="bad-timestamp",
            ),
        ],
    )
    def test_values_the_api_server_would_not_store_are_named_with_their_path(
        self,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        change: dict[str, Any],
        expected: str,
    ) -> None:
        """A quantity beyond an int64, a negative one, or an unparsable timestamp: exit 2,
        the field's path in the message."""
        items = _cluster()
        items[4] = pod("web-0", "hot", owner=owner_ref("ReplicaSet", "rs-0"), **change)
        code, plan, err = _plan(tmp_path, capsys, items)
        assert (code, plan) == (2, None)
        assert expected in err

    def test_a_duplicated_object_names_both_places(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A pod twice would silently replace its first copy; both paths are named."""
        items = [*_cluster(), pod("web-0", "idle-1", owner=owner_ref("ReplicaSet", "rs-0"))]
        code, _, err = _plan(tmp_path, capsys, items)
        assert code == 2
        assert "items[8].metadata.name: Pod default/web-0 again (first at" in err
        assert "items[4])" in err

    def test_json_nested_200000_deep_is_refused(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A 400 KB document nested 200,000 deep is a message, not a RecursionError."""
        deep = b'{"kind":"List","items":[{"kind":"Pod","spec":' + b"[" * 200_000
        code, _, err = _plan(tmp_path, capsys, raw=deep + b"]" * 200_000 + b"}]}")
        assert code == 2
        assert "nested deeper than the decoder allows" in err

    def test_a_gzip_that_expands_past_the_limit_is_refused_before_it_is_read_whole(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A small gzip expanding to 50 MB, against a 10 MB limit: refused, exit 2."""
        document = b'{"kind":"List","items":[],"padding":"' + b" " * 50_000_000 + b'"}'
        bomb = gzip.compress(document, compresslevel=9)
        assert len(bomb) < 100_000
        code, _, err = _plan(tmp_path, capsys, raw=bomb, extra=("--max-snapshot-bytes", "10000000"))
        assert code == 2
        assert "larger than 10000000 bytes: refused after gunzipping 10000000 bytes" in err
        assert "raise --max-snapshot-bytes to read it" in err

    def test_a_file_over_the_limit_is_refused_unread(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The limit applies to a plain file too, before it is read."""
        raw = json.dumps({"kind": "List", "items": _cluster()}).encode()
        code, _, err = _plan(tmp_path, capsys, raw=raw, extra=("--max-snapshot-bytes", "100"))
        assert code == 2
        assert "refused unread" in err

    def test_an_unknown_priority_class_name_is_a_policy_error(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A ``priorityThreshold.name`` no PriorityClass of the snapshot has would drop the
        profile and plan nothing; it is an error at its path instead."""
        policy = DUPLICATES.replace(
            "  plugins:",
            "  pluginConfig:\n  - name: DefaultEvictor\n    args:\n"
            "      priorityThreshold: {name: no-such-class}\n  plugins:",
        )
        code, _, err = _plan(tmp_path, capsys, _cluster(), policy=policy)
        assert code == 2
        assert (
            "profiles[0].pluginConfig[0].args.priorityThreshold.name: no PriorityClass "
            "'no-such-class' in the cluster"
        ) in err

    @pytest.mark.parametrize(
        ("policy", "expected"),
        [
            pytest.param(
                DUPLICATES + "x: " + "[" * 40 + "]" * 40 + "\n",
                "nested deeper than 32 levels",
                id="nested",
            ),
            pytest.param(
                "a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n",
                "more than 100000 values",
                id="alias-bomb",
            ),
        ],
    )
    def test_a_policy_too_deep_or_too_large_is_refused(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str, expected: str
    ) -> None:
        """Nesting and YAML alias expansion are bounded before the policy is walked."""
        code, _, err = _plan(tmp_path, capsys, _cluster(), policy=policy)
        assert code == 2
        assert expected in err


def _spread(**constraint: Any) -> dict[str, Any]:
    """A DoNotSchedule zone spread of ``app=web`` with ``constraint`` on top."""
    return {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        **constraint,
    }


def _budget(*expressions: dict[str, Any]) -> dict[str, Any]:
    return pdb("web", match_labels={"app": "web"}) | {
        "spec": {"selector": {"matchExpressions": list(expressions)}}
    }


def _web(index: int, **fields: Any) -> dict[str, Any]:
    fields.setdefault("cpu", "120m")
    return pod(f"web-{index}", "hot", owner=owner_ref("ReplicaSet", "rs"), **fields)


class TestWhatTheApiServerWouldRefuseIsRefused:
    """Objects the API server would never have stored are exit 2 at their path, not a plan
    made on them (a plan of 27 evictions shrunk to 1 by a shared uid, a budget that protects
    nothing) and not a traceback from float arithmetic on 10^400."""

    @pytest.mark.parametrize(
        ("extra", "expected"),
        [
            pytest.param(
                [_budget({"key": "app", "operator": "Bogus", "values": ["web"]})],
                "items[8].spec.selector.matchExpressions[0]: operator 'Bogus' is not one of",
                id="unknown-operator",
            ),
            pytest.param(
                [_budget({"key": "app", "operator": "Exists", "values": ["web"]})],
                "matchExpressions[0]: operator Exists takes no values",
                id="exists-with-values",
            ),
            pytest.param(
                [_budget({"key": "app", "operator": "In"})],
                "matchExpressions[0]: operator In needs at least one value",
                id="in-without-values",
            ),
            pytest.param(
                [_web(9, topology_spread=[_spread(maxSkew=0)])],
                "items[8].spec.topologySpreadConstraints[0].maxSkew: Expected `int` >= 1",
                id="max-skew-0",
            ),
            pytest.param(
                [_web(9, topology_spread=[_spread(minDomains=0)])],
                "items[8].spec.topologySpreadConstraints[0].minDomains: Expected `int` >= 1",
                id="min-domains-0",
            ),
            pytest.param(
                [_web(9, topology_spread=[_spread(maxSkew=10**400)])],
                "items[8].spec.topologySpreadConstraints[0].maxSkew: Expected `int` <= 2147483647",
                id="max-skew-10e400",
            ),
            pytest.param(
                [node("idle-4", images={"registry/app:1": 10**400})],
                "items[8].status.images[0].sizeBytes: beyond int64",
                id="image-size-10e400",
            ),
            pytest.param(
                [_web(9, priority=2**31)],
                "items[8].spec.priority: 2.15e+09 is outside -2147483648..2147483647",
                id="priority-beyond-int32",
            ),
            pytest.param(
                [node("idle\u200b4")],
                "items[8].metadata.name: 'idle\\\\u200b4' must be a DNS subdomain",
                id="zero-width-space-in-a-name",
            ),
            pytest.param(
                [node("idle-4", labels={"zone": "a" * 64})],
                "items[8].metadata.labels.zone: ",
                id="label-value-too-long",
            ),
            pytest.param(
                [node("idle-4", labels={"bad key": "a"})],
                "items[8].metadata.labels.bad key: key name must be",
                id="label-key-with-a-space",
            ),
            pytest.param(
                [_web(9, cpu="\u0661\u0662\u0660m")],
                "items[8].spec.containers[0].resources.requests.cpu: not a quantity",
                id="arabic-indic-digits",
            ),
            pytest.param(
                [_web(9, memory="1 Gi")],
                "items[8].spec.containers[0].resources.requests.memory: not a quantity",
                id="inner-whitespace",
            ),
            pytest.param(
                [node("idle-4", memory="1" * 800_000)],
                "items[8].status.allocatable.memory: not a quantity",
                id="quantity-of-800000-digits",
            ),
        ],
    )
    def test_refused_at_its_path(
        self,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        extra: list[dict[str, Any]],
        expected: str,
    ) -> None:
        """Each is exit 2 with the offending field's path; the rest of the file is fine."""
        code, plan, err = _plan(tmp_path, capsys, [*_cluster(), *extra], policy=DUPLICATES)
        assert (code, plan) == (2, None), err
        assert expected in err

    def test_two_objects_with_one_uid_name_both_places(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Evictions are keyed by uid: a second object with the same uid is refused, both
        paths named, instead of 27 planned evictions becoming 1."""
        items = [*_cluster(), _web(9, uid="uid-default-web-0")]
        code, _, err = _plan(tmp_path, capsys, items)
        assert code == 2
        assert "items[8].metadata.uid: uid 'uid-default-web-0' again (first at" in err
        assert "items[4])" in err

    @pytest.mark.parametrize(
        "tagged",
        [
            pytest.param("!!float ''", id="empty-float"),
            pytest.param("!!int ''", id="empty-int"),
            pytest.param("!!timestamp ''", id="empty-timestamp"),
            pytest.param("!!timestamp 2026-13-45", id="impossible-timestamp"),
            pytest.param("!!float '.'", id="float-of-a-dot"),
        ],
    )
    @pytest.mark.parametrize("command", ["plan", "live"])
    def test_a_yaml_tag_the_parser_cannot_build_is_exit_2(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], tagged: str, command: str
    ) -> None:
        """``x: !!float ''`` and its kind crash PyYAML's constructors (IndexError and
        others): the policy is refused with exit 2 by ``plan`` and by the live command before
        it connects, never a traceback."""
        policy = DUPLICATES + f"maxNoOfPodsToEvictPerNode: {tagged}\n"
        if command == "plan":
            code, _, err = _plan(tmp_path, capsys, _cluster(), policy=policy)
        else:
            policy_file = tmp_path / "policy.yaml"
            policy_file.write_text(policy)
            code = main(["descheduler", "--policy-config-file", str(policy_file)])
            err = capsys.readouterr().err
        assert code == 2
        assert "Traceback" not in err
        assert "not valid YAML" in err

    def test_a_policy_with_a_byte_order_mark_is_read(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """UTF-8 with a byte-order mark (what some editors write) is UTF-8, as for the config."""
        code, _, err = _plan(tmp_path, capsys, _cluster(), policy="\ufeff" + DUPLICATES)
        assert code == 0, err

    def test_an_integer_beyond_int64_in_the_policy_is_refused(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A policy integer no Go field holds (10^400) is an error at its path."""
        policy = DUPLICATES + "maxNoOfPodsToEvictPerNode: " + "1" + "0" * 400 + "\n"
        code, _, err = _plan(tmp_path, capsys, _cluster(), policy=policy)
        assert code == 2
        assert "maxNoOfPodsToEvictPerNode: must fit in an int64" in err


class TestEveryInputIsBoundedByBytesRead:
    """``stat`` says 0 for a FIFO or a device: the limits count bytes as they are read."""

    @pytest.mark.parametrize(
        ("flag", "expected"),
        [
            pytest.param("--snapshot", "larger than 1000 bytes", id="snapshot"),
            pytest.param("--node-reports", "larger than 1000 bytes", id="node-reports"),
            pytest.param("--policy-config-file", f"larger than {4 * 2**20} bytes", id="policy"),
            pytest.param("--scheduler-config", f"larger than {4 * 2**20} bytes", id="scheduler"),
        ],
    )
    def test_dev_zero_is_refused_at_the_limit(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, expected: str
    ) -> None:
        """Any input pointed at ``/dev/zero`` is exit 2 once past its limit, with the file,
        the limit and how to raise it (not lower it), instead of reading until memory runs
        out. (``--max-snapshot-bytes 1000`` bounds the snapshot and the NodeReports; the
        policy and the scheduler's config have a fixed limit.)"""
        snapshot = tmp_path / "snapshot.json"
        snapshot.write_bytes(json.dumps({"kind": "List", "items": []}).encode())
        policy = tmp_path / "policy.yaml"
        policy.write_text(DUPLICATES)
        files = {
            "--snapshot": str(snapshot),
            "--policy-config-file": str(policy),
            flag: "/dev/zero",
        }
        argv = ["descheduler", "plan", *(part for pair in files.items() for part in pair)]
        code = main([*argv, "--max-snapshot-bytes", "1000"])
        err = capsys.readouterr().err
        assert code == 2
        assert f"/dev/zero: {expected}: refused after reading" in err
        how = "raise --max-snapshot-bytes to read it" if "1000 " in expected else "limit is fixed"
        assert how in err

    @pytest.mark.parametrize("limit", ["0", "-1"])
    def test_a_limit_below_one_byte_is_refused(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], limit: str
    ) -> None:
        """``--max-snapshot-bytes 0`` used to mean the default, silently: it is exit 2."""
        code, _, err = _plan(tmp_path, capsys, _cluster(), extra=("--max-snapshot-bytes", limit))
        assert code == 2
        assert f"--max-snapshot-bytes: must be at least 1 byte, not {limit}" in err

    def test_a_snapshot_from_a_fifo_is_planned_on(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``--snapshot <(kubectl get ... -o json)`` works within the limit: the same plan as
        from a file."""
        raw = json.dumps({"kind": "List", "items": _cluster()}).encode()
        code, from_file, _ = _plan(tmp_path, capsys, raw=raw)
        policy = tmp_path / "policy.yaml"
        with fed_fifo(tmp_path / "fifo", raw) as fifo:
            argv = ["descheduler", "plan", "--snapshot", str(fifo), "--output", "json"]
            fifo_code = main([*argv, "--policy-config-file", str(policy)])
        assert (fifo_code, code) == (0, 0)
        assert json.loads(capsys.readouterr().out) == from_file


def test_a_plugin_that_raises_fails_the_plan_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failing plugin's part is missing from the cycle: no plan is printed, its reason is
    on stderr, exit 1."""

    def broken(self: RemoveDuplicates, nodes: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(RemoveDuplicates, "balance", broken)
    code, plan, err = _plan(tmp_path, capsys, _cluster(), policy=DUPLICATES)
    assert (code, plan) == (1, None)
    assert "failed: profile p: plugin RemoveDuplicates: RuntimeError: boom" in err
