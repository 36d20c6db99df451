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
from tests.harness.deschedulerstate import node, pod
from tests.harness.kubeobjects import owner_ref

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
    return {
        "apiVersion": "kubelet-companion.io/v1alpha1",
        "kind": "NodeReport",
        "metadata": {
            "name": name,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": name, "uid": f"uid-{name}"}
            ],
        },
        "status": {
            "observedTime": observed,
            "heartbeatSeconds": 60,
            "usage": {"cpu": 0.4, "memory": 2**30},
            **status,
        },
    }


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
        raw = json.dumps({"apiVersion": "v1", "kind": "List", "items": items or []}).encode()
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
        assert "larger than 10000000 bytes (--max-snapshot-bytes)" in err

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
