"""The real-node benchmark without a node: its parsers and figures on hand-made records, the
containers' script run by busybox's own shell, the images' archive layout, and the results
rendered (the benchmark itself never runs in CI)."""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import signal
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from scripts.benchmarks import realnode, render
from scripts.benchmarks.kubeletnode import figures, image, runtime, workload
from scripts.benchmarks.kubeletnode.figures import Binding, NodeSeen, PodSeen
from scripts.benchmarks.results import Results

BUCKETS = ((0, 6), (100000, 6), (2000000000, 6))
TAINT = "kubelet-companion.io/shutting-down"
SIGNAL = 1000.0


def agent_line(event: str, since: float, **fields: Any) -> dict[str, Any]:
    """A stamped shutdown log line of a shutdown whose signal came at ``SIGNAL``."""
    return {
        "event": event,
        "wall": SIGNAL + since,
        "monotonic": 50.0 + since,
        "since_start_seconds": since,
        **fields,
    }


def shutdown_lines() -> list[dict[str, Any]]:
    return [
        {"event": "agent started"},
        agent_line("shutting-down taint stored; the phases start", 0.05, waited_seconds=0.01),
        agent_line("shutdown phase started", 0.06, priority=0, pods=2),
        agent_line("shutdown phase ended", 1.5, priority=0, pods=2, gone=2, status="done"),
        agent_line("shutdown phase started", 1.51, priority=100000, pods=1),
        agent_line("shutdown phase ended", 2.5, priority=100000, pods=1, gone=1, status="done"),
        agent_line("shutdown phase started", 2.51, priority=2000000000, pods=1),
        agent_line("shutdown phase ended", 3.0, priority=2000000000, pods=1, gone=1, status="done"),
        {
            "event": "graceful shutdown finished",
            "released_by": "phases-done",
            "seconds": 3.01,
            "lock_released": True,
        },
        agent_line("shutdown phase started", 0.01, priority=0, pods=9),  # a later shutdown
    ]


def log(pod: str, uid: str, *terms: float, container: str = "app") -> figures.ContainerLog:
    return figures.ContainerLog("default", pod, uid, container, (SIGNAL - 60,), terms)


# -- the containers' files --------------------------------------------------------------------


def test_a_container_file_gives_its_pod_container_and_times() -> None:
    """The file name carries namespace, pod, uid and container; ``start`` and ``TERM``
    lines carry Unix seconds with microseconds."""
    parsed = figures.parse_container_log(
        "kube-system_crit-a_u-1_sidecar.log", "start 1000.5\nTERM 1002.250001\n"
    )
    assert parsed == figures.ContainerLog(
        "kube-system", "crit-a", "u-1", "sidecar", (1000.5,), (1002.250001,)
    )
    assert parsed.key == "kube-system/crit-a"


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("default_pod_uid.log", id="three-parts"),
        pytest.param("default_pod_uid_app_extra.log", id="five-parts"),
        pytest.param("default__uid_app.log", id="empty-part"),
        pytest.param("default_pod_uid_app.txt", id="not-a-log"),
    ],
)
def test_a_file_not_named_like_ours_is_ignored(name: str) -> None:
    """Only ``<namespace>_<pod>_<uid>_<container>.log`` is one of ours (Kubernetes names
    never hold an underscore); anything else in the directory is skipped."""
    assert figures.parse_container_log(name, "TERM 1.0\n") is None


def test_lines_that_are_not_times_are_skipped() -> None:
    """A garbled, unknown or oversized line is left out; the good lines still count."""
    text = "start 1.0\nTERM nan-ish\nKILL 3.0\n" + "TERM " + "9" * 5000 + "\nTERM 2.0\n"
    parsed = figures.parse_container_log("a_b_c_d.log", text)
    assert parsed is not None
    assert (parsed.starts, parsed.terms) == ((1.0,), (2.0,))


@pytest.mark.skipif(not Path("/bin/busybox").exists(), reason="needs Debian's busybox-static")
def test_the_containers_script_logs_its_term_in_busybox_sh(tmp_path: Path) -> None:
    """The script the workload's containers run, in busybox's own shell: it logs its start,
    and on SIGTERM a ``TERM`` time between the signal being sent and the shell's exit, then
    waits its clean-up time and exits 0; the parser reads the file it wrote."""
    container = workload.Container("app", exit_after=0.3)
    script = workload.command(container, str(tmp_path))
    env = {"POD_NAMESPACE": "default", "POD_NAME": "low-a", "POD_UID": "u-1", "PATH": "/bin"}
    shell = subprocess.Popen(["/bin/busybox", *script], env=env, start_new_session=True)
    path = tmp_path / "default_low-a_u-1_app.log"
    deadline = time.monotonic() + 10
    while not (path.exists() and path.read_text().startswith("start")):
        assert time.monotonic() < deadline, "the script never logged its start"
        time.sleep(0.01)
    sent = time.time()
    shell.send_signal(signal.SIGTERM)
    assert shell.wait(10) == 0
    exited = time.time()
    parsed = figures.parse_container_log(path.name, path.read_text())
    assert parsed is not None
    assert len(parsed.terms) == 1
    assert sent <= parsed.terms[0] <= exited - 0.25  # the TERM comes before the clean-up
    # The script's own ``sleep`` outlives it (in a pod, PID 1's exit ends it): its process
    # group is the shell's, and nothing else is in it.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(shell.pid, signal.SIGKILL)


# -- the agent's log ---------------------------------------------------------------------------


def test_the_first_shutdown_in_the_log_is_read_with_its_phases() -> None:
    """From the agent's JSON lines: the signal's time (``wall - since_start_seconds``), the
    taint's wait, each phase's start and end, and why the lock went; a later shutdown's
    lines after ``graceful shutdown finished`` are not mixed in."""
    shutdown = figures.parse_shutdown(shutdown_lines())
    assert shutdown.signal_wall == pytest.approx(SIGNAL)
    assert shutdown.taint_waited == pytest.approx(0.01)
    assert not shutdown.started_untainted
    assert [(p.priority, p.pods, p.status) for p in shutdown.phases] == [
        (0, 2, "done"),
        (100000, 1, "done"),
        (2000000000, 1, "done"),
    ]
    assert shutdown.phases[1].started == pytest.approx(SIGNAL + 1.51)
    assert (shutdown.released_by, shutdown.lock_released) == ("phases-done", True)


def test_a_shutdown_that_started_without_the_taint_says_so() -> None:
    """The warning line marks the run as started untainted, and late pods are listed."""
    lines = [
        agent_line(
            "the shutting-down taint is not stored yet; the phases start without it and it "
            "is still retried",
            0.6,
            waited_seconds=0.6,
        ),
        agent_line("late pod: it arrived on the node during the shutdown", 1.0, pod="ns/x"),
        {"event": "graceful shutdown finished", "released_by": "budget", "seconds": 18.0},
    ]
    shutdown = figures.parse_shutdown(lines)
    assert shutdown.started_untainted
    assert shutdown.taint_stored_wall is None
    assert shutdown.late_pods == ("ns/x",)
    assert shutdown.released_by == "budget"


def test_only_json_object_lines_are_read() -> None:
    """Console lines, arrays and broken JSON in the agent's output are skipped."""
    text = 'plain text\n[1, 2]\n{"event": "a"}\n{"event": \n{"event": "b"}\n'
    assert [line["event"] for line in figures.json_lines(text)] == ["a", "b"]


# -- SIGTERM against the phases ----------------------------------------------------------------


def test_each_term_is_timed_against_its_own_buckets_phase() -> None:
    """A pod's priority picks its bucket as the kubelet's rule does (the highest at or
    below it); its TERM is timed from that phase's start and to that phase's deadline
    (the signal plus the budgets up to it), and from the moment it was seen deleting."""
    shutdown = figures.parse_shutdown(shutdown_lines())
    logs = [log("low", "u-low", SIGNAL + 0.16), log("mid", "u-mid", SIGNAL + 1.71)]
    priorities = {"u-low": 0, "u-mid": 150000}
    timings, silent = figures.term_timings(
        logs,
        priorities,
        shutdown,
        BUCKETS,
        since=SIGNAL,
        until=SIGNAL + 20,
        deleting={"u-mid": SIGNAL + 1.61},
    )
    assert silent == []
    low, mid = sorted(timings, key=lambda t: t.phase_priority)
    assert (low.phase_priority, mid.phase_priority) == (0, 100000)
    assert low.after_phase_start == pytest.approx(0.1)
    assert low.before_deadline == pytest.approx(6 - 0.16)
    assert (low.after_delete, low.before_delete) == (None, None)
    assert mid.after_phase_start == pytest.approx(0.2)
    assert mid.before_deadline == pytest.approx(12 - 1.71)
    assert mid.after_delete == pytest.approx(0.1)
    assert mid.before_delete == pytest.approx(0.1)


def test_a_pod_without_a_term_in_the_window_is_named() -> None:
    """A container whose only TERM is outside the shutdown's window (an earlier run's pod of
    the same name has another uid and is not asked about) is reported as silent; a pod the
    run did not ask about is ignored."""
    shutdown = figures.parse_shutdown(shutdown_lines())
    logs = [log("low", "u-low", SIGNAL - 30), log("other", "u-other", SIGNAL + 0.2)]
    timings, silent = figures.term_timings(
        logs, {"u-low": 0}, shutdown, BUCKETS, since=SIGNAL, until=SIGNAL + 20
    )
    assert (timings, silent) == ([], ["default/low/app"])


def test_a_term_whose_phase_never_started_is_not_timed() -> None:
    """A pod of a bucket whose phase the log does not show is named, not timed."""
    shutdown = figures.parse_shutdown(shutdown_lines()[:3])
    timings, silent = figures.term_timings(
        [log("crit", "u-c", SIGNAL + 0.3)],
        {"u-c": 2000000000},
        shutdown,
        BUCKETS,
        since=SIGNAL,
        until=SIGNAL + 20,
    )
    assert timings == []
    assert silent == ["default/crit/app (its phase never started)"]


def test_terms_of_given_pods_and_the_first_one() -> None:
    """``terms_in`` names the containers of the given pods with a TERM in the window (the
    DaemonSet's must get none); ``first_term`` is the earliest at or after a moment."""
    logs = [log("ds", "u-ds", SIGNAL + 5), log("a", "u-a", SIGNAL + 0.3, SIGNAL + 9)]
    assert figures.terms_in(logs, {"u-ds"}, SIGNAL, SIGNAL + 4) == []
    assert figures.terms_in(logs, {"u-ds"}, SIGNAL, SIGNAL + 6) == ["default/ds/app"]
    assert figures.first_term(logs, {"u-a"}, SIGNAL) == SIGNAL + 0.3
    assert figures.first_term(logs, {"u-a"}, SIGNAL + 1) == SIGNAL + 9
    assert figures.first_term(logs, {"u-ds"}, SIGNAL + 6) is None


# -- the watches -------------------------------------------------------------------------------


def pod(
    at: float,
    revision: int,
    name: str,
    uid: str,
    node: str = "realnode",
    *,
    deleting: bool = False,
    disruption: bool = False,
    ready: bool = True,
) -> PodSeen:
    return PodSeen(
        at, revision, "MODIFIED", "default", name, uid, node, deleting, disruption, ready
    )


def test_a_watch_event_is_reduced_to_what_the_figures_read() -> None:
    """Revision, names, node, deleting, and the DisruptionTarget and Ready conditions."""
    obj = {
        "metadata": {
            "name": "a",
            "namespace": "ns",
            "uid": "u",
            "resourceVersion": "42",
            "deletionTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"nodeName": "n"},
        "status": {
            "conditions": [
                {"type": "DisruptionTarget", "status": "True"},
                {"type": "Ready", "status": "False"},
            ]
        },
    }
    assert figures.pod_seen(1.5, "MODIFIED", obj) == PodSeen(
        1.5, 42, "MODIFIED", "ns", "a", "u", "n", True, True, False
    )
    node = {"metadata": {"resourceVersion": "7"}, "spec": {"taints": [{"key": TAINT}]}}
    assert figures.node_seen(2.0, node) == NodeSeen(2.0, 7, frozenset({TAINT}))


def test_the_taint_comes_first_when_its_revision_is_lower() -> None:
    """Revisions above the baseline only: the first Node revision with the taint against
    the first pod of the node marked DisruptionTarget or deleting (whichever is first)."""
    nodes = [NodeSeen(1.0, 5, frozenset({TAINT})), NodeSeen(2.0, 11, frozenset({TAINT}))]
    pods = [
        pod(1.0, 4, "old", "u0", deleting=True),  # at or below the baseline
        pod(2.1, 13, "b", "u2", deleting=True),
        pod(2.05, 12, "a", "u1", disruption=True),
        pod(2.0, 14, "elsewhere", "u3", node="other", deleting=True),
    ]
    order = figures.write_order(nodes, pods, TAINT, "realnode", after=10)
    assert (order.taint_revision, order.first_pod_write_revision) == (11, 12)
    assert order.first_pod_write == "default/a DisruptionTarget"
    assert order.taint_first
    assert order.first_write_seen_at - order.taint_seen_at == pytest.approx(0.05)


def test_a_pod_write_before_the_taint_fails_the_order() -> None:
    """A pod marked deleting at a revision below the taint's: the taint was not first."""
    nodes = [NodeSeen(2.0, 15, frozenset({TAINT}))]
    order = figures.write_order(
        nodes, [pod(2.0, 13, "a", "u1", deleting=True)], TAINT, "realnode", after=10
    )
    assert not order.taint_first
    assert order.first_pod_write == "default/a deleting"


def test_no_taint_or_no_pod_write_is_not_taint_first() -> None:
    """Nothing to compare (the taint never stored, or no pod written) never counts as met."""
    assert not figures.write_order(
        [], [pod(1, 13, "a", "u", deleting=True)], TAINT, "realnode", 10
    ).taint_first
    assert not figures.write_order(
        [NodeSeen(1, 12, frozenset({TAINT}))], [], TAINT, "realnode", 10
    ).taint_first


def test_the_taints_removal_is_the_first_event_without_it_after_a_moment() -> None:
    nodes = [
        NodeSeen(1.0, 1, frozenset()),
        NodeSeen(2.0, 2, frozenset({TAINT})),
        NodeSeen(3.0, 3, frozenset({"other"})),
        NodeSeen(4.0, 4, frozenset()),
    ]
    assert figures.taint_lifted_at(nodes, TAINT, after=2.5) == 3.0
    assert figures.taint_lifted_at(nodes, TAINT, after=4.0) is None


def test_a_binding_is_the_first_event_that_shows_the_pod_on_the_node() -> None:
    """Each pod once, when first seen bound to the node, with when it was first seen at
    all (a replacement is made unbound) and the binding's revision; pods of other nodes
    are not bindings here."""
    pods = [
        pod(1.0, 1, "r", "u-r", node=""),
        pod(3.0, 3, "r", "u-r"),
        pod(4.0, 4, "r", "u-r"),
        pod(2.0, 2, "x", "u-x", node="other"),
    ]
    assert figures.bindings(pods, "realnode") == [Binding("default/r", "u-r", 3.0, 1.0, 3)]


def test_the_window_counts_bindings_in_it_and_replacements_that_waited() -> None:
    """Seen bound inside [signal, release]: a violation, named. Created inside and bound
    after the release: a replacement the taint kept off, with how long after the release."""
    found = [
        Binding("ns/before", "1", 0.5, 0.1, 1),
        Binding("ns/during", "2", 5.0, 4.0, 5),
        Binding("ns/kept-off", "3", 12.5, 3.0, 30),
        Binding("ns/after", "4", 14.0, 13.0, 31),
    ]
    window = figures.binding_window(found, 1.0, 12.0, tainted=(2, 20))
    assert window.bound == ["ns/during"]
    assert window.created == 1
    assert window.waited == [pytest.approx(0.5)]


def test_a_binding_written_under_the_taint_counts_however_late_it_was_seen() -> None:
    """The revisions decide too: a binding written between the taint's addition and its
    removal is a violation even if the watch delivered it after the release; one written
    after the removal is not, even if the pod watch showed it before the Node watch
    showed the removal."""
    late = Binding("ns/late", "1", 12.5, 3.0, 15)
    after_removal = Binding("ns/fine", "2", 12.1, 3.0, 21)
    window = figures.binding_window([late, after_removal], 1.0, 12.0, tainted=(10, 20))
    assert window.bound == ["ns/late"]
    assert window.created == 1


def test_the_taints_removal_revision() -> None:
    nodes = [NodeSeen(1.0, 5, frozenset({TAINT})), NodeSeen(2.0, 9, frozenset())]
    assert figures.taint_removed_revision(nodes, TAINT, after=5) == 9
    assert figures.taint_removed_revision(nodes, TAINT, after=9) is None


def test_deleting_and_ready_moments() -> None:
    """The first event after a moment that shows a pod deleting (per uid), or a pod Ready."""
    pods = [
        pod(1.0, 1, "a", "u-a", deleting=True),
        pod(3.0, 3, "a", "u-a", deleting=True),
        pod(2.5, 2, "a", "u-a", deleting=True),
        pod(2.0, 2, "b", "u-b", ready=False),
        pod(4.0, 4, "b", "u-b"),
    ]
    assert figures.deleting_at(pods, after=2.0) == {"u-a": 2.5}
    assert figures.ready_at(pods, "default/b", after=1.0) == 4.0
    assert figures.ready_at(pods, "default/b", after=4.0) is None


def test_ready_since_reads_the_ready_conditions_transition() -> None:
    """Unix seconds of the Ready condition's last transition; not Ready, or a time that
    does not parse, gives None."""
    ready = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "1970-01-01T00:01:40Z"}
            ]
        }
    }
    assert figures.ready_since(ready) == 100.0
    ready["status"]["conditions"][0]["lastTransitionTime"] = "soon"
    assert figures.ready_since(ready) is None
    assert (
        figures.ready_since({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
        is None
    )


# -- usage ---------------------------------------------------------------------------------------


def test_usage_is_compared_pod_by_pod_by_uid() -> None:
    """Pods matched by uid (names can repeat across recreations); nanocores become cores;
    pods only one side shows are listed, and a summary pod without figures is skipped."""
    summary = {
        "pods": [
            {
                "podRef": {"namespace": "ns", "name": "a", "uid": "u-a"},
                "cpu": {"usageNanoCores": 250_000_000},
                "memory": {"workingSetBytes": 64 << 20},
            },
            {
                "podRef": {"namespace": "ns", "name": "b", "uid": "u-b"},
                "cpu": {"usageNanoCores": 0},
                "memory": {"workingSetBytes": 1 << 20},
            },
            {"podRef": {"namespace": "ns", "name": "c", "uid": "u-c"}, "cpu": {}},
        ]
    }
    report = [
        {"namespace": "ns", "name": "a", "uid": "u-a", "cpu": 0.26, "memory": 65 << 20},
        {"namespace": "ns", "name": "old", "uid": "u-old", "cpu": 0.0, "memory": 1},
    ]
    pairs, only_kubelet, only_report = figures.compare_usage(report, summary)
    assert pairs == [figures.UsagePair("ns/a", 0.26, 0.25, 65 << 20, 64 << 20)]
    assert (only_kubelet, only_report) == (["ns/b"], ["ns/old"])


# -- the one-shot commands ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stdout", "parsed", "summary"),
    [
        pytest.param('{"warnings": ["w1", "w2"]}', True, "2 warnings, first: w1", id="doctor"),
        pytest.param('{"status": {"pods": [{}, {}, {}]}}', True, "3 pods", id="report"),
        pytest.param(
            '{"containers": [{"state": "ok"}, {"state": "no-cgroup"}, {"state": "ok"}]}',
            True,
            "3 containers: 1 no-cgroup, 2 ok",
            id="swap-report",
        ),
        pytest.param("[]", True, "a list", id="not-an-object"),
    ],
)
def test_a_commands_json_is_summed_up_in_a_line(stdout: str, parsed: bool, summary: str) -> None:
    assert figures.command_summary(stdout) == (parsed, summary)


def test_a_command_whose_stdout_is_not_one_json_document_is_caught() -> None:
    """A log line on stdout before the document (the bug this checks for) fails the parse."""
    parsed, summary = figures.command_summary('{"event": "warning"}\n{"warnings": []}\n')
    assert not parsed
    assert summary.startswith("not JSON")


# -- what the node is made of --------------------------------------------------------------------


def test_an_image_archive_is_an_oci_layout_naming_its_image() -> None:
    """``oci-layout``, ``index.json`` naming the image, and every blob under its digest,
    the config's diff_id the uncompressed layer's; the same input gives the same bytes."""
    layer = image.Layer(tar=b"raw layer", gzipped=b"gzipped layer")
    archive = image.image_archive("localhost/x:1", layer, entrypoint=None, cmd=["sh"])
    assert archive == image.image_archive("localhost/x:1", layer, entrypoint=None, cmd=["sh"])
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    index = json.loads(files["index.json"])
    (entry,) = index["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == "localhost/x:1"
    manifest = json.loads(files[f"blobs/sha256/{entry['digest'][7:]}"])
    config = json.loads(files[f"blobs/sha256/{manifest['config']['digest'][7:]}"])
    assert config["rootfs"]["diff_ids"] == [image.digest(b"raw layer")]
    assert files[f"blobs/sha256/{manifest['layers'][0]['digest'][7:]}"] == b"gzipped layer"
    for name, data in files.items():
        if name.startswith("blobs/"):
            assert image.digest(data) == "sha256:" + name.rsplit("/", 1)[1]


def test_containerds_config_quotes_every_path() -> None:
    """Paths go into TOML as quoted strings (a JSON string is a TOML basic string), under
    the node's own directory; the sandbox image is ours; cgroupfs, not systemd."""
    text = runtime.containerd_config(Path('/srv/a "b"'), Path("/usr/sbin/runc"), Path("/cni"))
    assert 'root = "/srv/a \\"b\\"/root"' in text
    assert f'sandbox_image = "{image.SANDBOX_IMAGE}"' in text
    assert "SystemdCgroup = false" in text


def test_the_daemon_set_is_critical_and_tolerates_the_gate() -> None:
    """The gate waits for it only if its pods carry the critical label, and it can get a
    pod only if it tolerates the gate's taint."""
    built = workload.daemon_set("/x")
    template = built["spec"]["template"]
    assert template["metadata"]["labels"][workload.GATE.label] == "true"
    assert {"key": workload.GATE.taint, "operator": "Exists", "effect": "NoSchedule"} in (
        template["spec"]["tolerations"]
    )


# -- the results ---------------------------------------------------------------------------------


def sample_run(
    index: int, *, taint_first: bool = True, bound: tuple[str, ...] = ()
) -> dict[str, Any]:
    return {
        "run": index,
        "release": 4.5,
        "released_by": "phases-done",
        "taint_first": taint_first,
        "taint_revision": 10,
        "first_write_revision": 12 if taint_first else 9,
        "first_write": "default/low-a DisruptionTarget",
        "taint_lead": 0.05,
        "taint_wait": 0.001,
        "untainted": False,
        "signal_to_first_term": 0.2,
        "term_after_phase_start": [0.1, 0.25],
        "term_after_delete": [0.03, 0.2],
        "term_before_delete": [0.07, 0.05],
        "term_before_deadline": [5.8, 5.5],
        "marked_after_phase_start": [0.02, 0.03],
        "terms": 2,
        "silent": [],
        "daemon_terms": [],
        "late_pods": [],
        "phases": ["0:done:2/2"],
        "bound": list(bound),
        "replacements": 2,
        "replacement_wait": [0.04, 0.05],
    }


def test_the_results_render_with_the_brief_figures(tmp_path: Path) -> None:
    """Ten sample shutdowns render: the taint-first count and the bindings met, a late
    SIGTERM reported as missed with the median as its reason, and the per-run table."""
    bench = type("B", (), {})()
    bench.runs = [sample_run(i) for i in range(9)] + [sample_run(9)]
    bench.runs[3]["term_after_phase_start"] = [0.1, 0.45]
    bench.readiness, bench.floor, bench.usage = [0.03, 0.02], [(0.04, 0.01, 0.03)], {}
    bench.commands = [["kubelet-companion doctor --json", "0", "yes", "0 warnings"]]
    bench.problems, bench.credentials = [], "agent token"
    args = type("A", (), {"json": tmp_path / "realnode.json", "settle": 10})()
    realnode.emit(bench, args, Results("realnode", "Beside a real kubelet"))  # type: ignore[arg-type]
    data = json.loads((tmp_path / "realnode.json").read_text())
    by_key = {f["key"]: f for f in data["figures"]}
    assert (by_key["taint_first"]["value"], by_key["taint_first"]["status"]) == (100, "met")
    assert by_key["bound"]["status"] == "met"
    assert by_key["term_latest"]["status"] == "missed"
    assert by_key["term_latest"]["reason"].startswith("the latest: ")
    assert by_key["release_latest"]["status"] == "met"
    data["quick"] = False
    text = render.section("realnode", data)
    assert "Each shutdown" in text
    assert "doctor --json" in text


def test_a_run_bound_during_the_shutdown_misses_and_names_the_pod(tmp_path: Path) -> None:
    bench = type("B", (), {})()
    bench.runs = [sample_run(0), sample_run(1, taint_first=False, bound=("default/web-x",))]
    bench.readiness, bench.floor, bench.usage, bench.commands = [], [], {}, []
    bench.problems, bench.credentials = [], ""
    args = type("A", (), {"json": tmp_path / "r.json", "settle": 10})()
    realnode.emit(bench, args, Results("realnode", "Beside a real kubelet"))  # type: ignore[arg-type]
    by_key = {f["key"]: f for f in json.loads((tmp_path / "r.json").read_text())["figures"]}
    assert (by_key["bound"]["value"], by_key["bound"]["status"]) == (1, "missed")
    assert "default/web-x" in by_key["bound"]["reason"]
    assert by_key["taint_first"]["value"] == 50
    assert by_key["taint_first"]["status"] == "missed"
    assert "run 1" in by_key["taint_first"]["reason"]
    assert not math.isnan(by_key["taint_lead"]["value"])
    assert shutil.which("true")  # the module imports without the node's binaries
