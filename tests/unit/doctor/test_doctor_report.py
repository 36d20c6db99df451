"""doctor's rows and warnings, built from plain facts (no machine needed)."""

from dataclasses import replace

import pytest

from agent.config import AgentConfig, parse_document
from agent.doctor.render import render_json, render_table
from agent.doctor.report import ClusterStatus, build_report, dropin_order_warnings
from agent.logind.dropin_order import Override
from agent.logind.facts import LogindFacts
from agent.logind.manager import Inhibitor
from agent.node.cgroups import CgroupFacts, CgroupMode
from agent.node.facts import NodeFacts
from agent.node.kernel import KernelFacts
from agent.node.memory import MemoryFacts, SwapDevice
from agent.node.tmpfs import NoswapSupport

GIB = 2**30
SWAPFILE = SwapDevice("/swapfile", "file", 4 * GIB, 0, -2)


def facts(
    *, swap: bool = False, noswap: bool = True, mode: CgroupMode = CgroupMode.V2
) -> NodeFacts:
    return NodeFacts(
        memory=MemoryFacts(
            16 * GIB,
            8 * GIB,
            4 * GIB if swap else 0,
            4 * GIB if swap else 0,
            0,
            0,
            (SWAPFILE,) if swap else (),
        ),
        cgroups=CgroupFacts(mode, swap_controller=mode is CgroupMode.V2, own_cgroup="/"),
        kernel=KernelFacts("6.1.0", (6, 1, 0), 67584, "boot", False),
        tmpfs_noswap=NoswapSupport(noswap, "probe"),
    )


LOGIND = LogindFacts(True, 45_000_000, "ok")
"""logind with room for the default 30 s budget."""
SHORT_DELAY_LOGIND = LogindFacts(True, 5_000_000, "ok")
NODE_ONLY = ClusterStatus("node-only", "none")


def test_swap_without_noswap_warns_about_memory_backed_volumes() -> None:
    """Swap on with tmpfs noswap unsupported is the warning kubelet also raises."""
    report = build_report(AgentConfig(), "n1", facts(swap=True, noswap=False), LOGIND, NODE_ONLY)
    assert (
        "swap is on but tmpfs noswap is unsupported: memory-backed volumes may reach disk"
        in report.warnings
    )


def test_a_healthy_node_has_no_warnings() -> None:
    """No swap, cgroup v2, the default shutdown budget within logind's delay: no warnings."""
    assert build_report(AgentConfig(), "n1", facts(), LOGIND, NODE_ONLY).warnings == []


def test_swap_on_cgroup_v1_warns() -> None:
    """Kubernetes limits swap only on cgroup v2."""
    report = build_report(
        AgentConfig(), "n1", facts(swap=True, mode=CgroupMode.HYBRID), LOGIND, NODE_ONLY
    )
    assert any("only on cgroup v2" in w for w in report.warnings)


def test_limited_swap_without_swap_warns() -> None:
    """LimitedSwap configured on a node without swap is pointed out."""
    config = parse_document(AgentConfig, "memorySwap: {swapBehavior: LimitedSwap}", "x")
    report = build_report(config, "n1", facts(), LOGIND, NODE_ONLY)
    assert "memorySwap.swapBehavior is LimitedSwap but swap is off" in report.warnings


def test_short_inhibit_delay_is_reported_with_the_fix() -> None:
    """A 5 s logind delay under a 30 s budget names the drop-in that will raise it."""
    config = parse_document(AgentConfig, "shutdownGracePeriod: 30s", "x")
    report = build_report(config, "n1", facts(), SHORT_DELAY_LOGIND, NODE_ONLY)
    (warning,) = report.warnings
    assert "InhibitDelayMaxSec is 5s, below the shutdown budget of 30s" in warning
    assert "99-zz-kubelet-companion.conf" in warning


def test_missing_logind_with_a_budget_warns() -> None:
    """Without logind nothing holds shutdown back, so pods are not drained."""
    config = parse_document(AgentConfig, "shutdownGracePeriod: 30s", "x")
    report = build_report(config, "n1", facts(), LogindFacts(False, None, "no bus"), NODE_ONLY)
    assert any("logind is not reachable" in w for w in report.warnings)


@pytest.mark.parametrize(
    ("config_text", "logind", "expected"),
    [
        pytest.param(
            "shutdownGracePeriod: 0s",
            LOGIND,
            ["graceful shutdown is off (shutdownGracePeriod 0s): pods are not drained before "
             "the node shuts down"],
            id="shutdown-off",
        ),
        pytest.param(
            "shutdownGracePeriod: 0s",
            LogindFacts(False, None, "no bus"),
            ["graceful shutdown is off (shutdownGracePeriod 0s): pods are not drained before "
             "the node shuts down",
             "logind is not reachable (no bus): graceful shutdown could not work on this node"],
            id="shutdown-off-and-no-logind",
        ),
        pytest.param(
            "",
            LogindFacts(False, None, "no bus"),
            ["logind is not reachable (no bus): graceful shutdown (30s) cannot hold the "
             "shutdown back, pods will not be drained at shutdown"],
            id="default-budget-without-logind",
        ),
        pytest.param(
            "",
            replace(
                LOGIND,
                inhibitors=(
                    Inhibitor("shutdown", "kubelet", "Kubelet needs time", "delay", 0, 812),
                    Inhibitor("sleep", "kubelet", "x", "delay", 0, 812),
                    Inhibitor("shutdown", "kubelet-companion", "ours", "delay", 0, 900),
                ),
            ),
            ["kubelet (pid 812) also holds a shutdown delay inhibitor lock: two shutdown "
             "managers are at work; set kubelet's shutdownGracePeriod to 0 to leave shutdown "
             "to kubelet-companion"],
            id="kubelet-holds-a-shutdown-lock",
        ),
    ],
)  # fmt: skip
def test_shutdown_that_would_not_drain_pods_is_a_warning(
    config_text: str, logind: LogindFacts, expected: list[str]
) -> None:
    """Shutdown off, logind unreachable, or kubelet holding a shutdown lock is each a warning."""
    config = parse_document(AgentConfig, config_text, "x")
    assert build_report(config, "n1", facts(), logind, NODE_ONLY).warnings == expected


def test_unreachable_cluster_warns() -> None:
    """A configured but unreachable cluster is a warning."""
    report = build_report(
        AgentConfig(), "n1", facts(), LOGIND, ClusterStatus("unreachable", "refused")
    )
    assert report.warnings == ["cluster unreachable: refused"]


def test_credentials_and_their_node_binding_problem_are_shown() -> None:
    """The cluster section names the credentials; a token the own-node admission policy
    would refuse (here: bound to no node) is a warning, and a good one is none."""
    bad = ClusterStatus(
        "reachable", "kubeconfig k, server v1.33.1", "token of sa bound to no node", "no node!"
    )
    report = build_report(AgentConfig(), "n1", facts(), LOGIND, bad)
    assert report.sections["cluster"]["credentials"] == "token of sa bound to no node"
    assert report.warnings == ["no node!"]
    good = replace(bad, credentials="token of sa bound to node n1", credential_problem=None)
    assert build_report(AgentConfig(), "n1", facts(), LOGIND, good).warnings == []
    assert (
        "credentials"
        not in build_report(AgentConfig(), "n1", facts(), LOGIND, NODE_ONLY).sections["cluster"]
    )


def test_table_and_json_carry_the_same_facts() -> None:
    """The table shows sections and warnings; JSON holds the same values."""
    report = build_report(AgentConfig(), "n1", facts(swap=True, noswap=False), LOGIND, NODE_ONLY)
    table = render_table(report)
    assert "[swap]" in table
    assert "4294967296 (4Gi)" in table
    assert "! swap is on but tmpfs noswap is unsupported" in table
    data = render_json(report)
    assert '"total_bytes": 4294967296' in data
    assert replace(report, warnings=[]).warnings == []


def test_a_dropin_applied_after_ours_is_a_warning() -> None:
    """A drop-in that sets InhibitDelayMaxSec after ours is named in a warning line."""
    later = Override("/etc/systemd/logind.conf.d/99-zzz.conf", "5", "later")
    report = build_report(AgentConfig(), "n1", facts(), LOGIND, NODE_ONLY, dropin_overrides=[later])
    (warning,) = report.warnings
    assert "99-zzz.conf sets InhibitDelayMaxSec=5 after ours" in warning
    assert "99-zz-kubelet-companion.conf" in warning
    assert f"  ! {warning}" in render_table(report)


def test_dropin_order_is_not_ours_to_judge_when_we_write_none() -> None:
    """With manageLogindDelay off we write no drop-in, so the order is not a warning."""
    config = parse_document(AgentConfig, "shutdown: {manageLogindDelay: false}", "x")
    later = Override("/etc/systemd/logind.conf.d/99-zzz.conf", "5", "later")
    assert dropin_order_warnings(config, [later]) == []
