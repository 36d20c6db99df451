"""doctor's rows and warnings, built from plain facts (no machine needed)."""

import json
import re
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
        cgroups=CgroupFacts(
            mode,
            swap_controller=mode is CgroupMode.V2,
            own_cgroup="/",
            memsw_accounting=mode in (CgroupMode.V1, CgroupMode.HYBRID),
        ),
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


@pytest.mark.parametrize("mode", [CgroupMode.V1, CgroupMode.HYBRID])
@pytest.mark.parametrize("swap", [False, True], ids=["swap-off", "swap-on"])
@pytest.mark.parametrize("behavior", ["NoSwap", "LimitedSwap"])
def test_cgroup_v1_warns_once_with_what_it_means(
    mode: CgroupMode, swap: bool, behavior: str
) -> None:
    """On v1 and hybrid, swap on or off, whatever the behaviour: one warning that LimitedSwap
    needs cgroup v2, and what is still checked; no second LimitedSwap-on-v2 warning."""
    config = parse_document(AgentConfig, f"memorySwap: {{swapBehavior: {behavior}}}", "x")
    report = build_report(config, "n1", facts(swap=swap, mode=mode), LOGIND, NODE_ONLY)
    (warning,) = [w for w in report.warnings if "cgroup v2" in w]
    assert warning.startswith(f"LimitedSwap needs cgroup v2: cgroups are {mode.value},")
    assert "still checked: swap presence and tmpfs noswap, per-pod usage" in warning
    assert ("swap is on" in warning) is swap
    assert ("memorySwap.swapBehavior LimitedSwap cannot apply" in warning) is (
        behavior == "LimitedSwap"
    )


@pytest.mark.parametrize("mode", [CgroupMode.V1, CgroupMode.HYBRID])
def test_no_usable_swap_controller_is_reported_on_cgroup_v1(mode: CgroupMode) -> None:
    """memsw on a v1 node is shown, in the table and the JSON, as not usable by the kubelet
    for LimitedSwap; never as a swap controller (``yes``)."""
    report = build_report(AgentConfig(), "n1", facts(mode=mode), LOGIND, NODE_ONLY)
    cgroups = report.sections["cgroups"]
    assert cgroups["limited_swap"] is False
    assert cgroups["swap_controller"] == (
        "memory.memsw only (cgroup v1 memory+swap accounting): not usable by the kubelet for "
        "LimitedSwap"
    )
    table = render_table(report)
    assert re.search(r"\n  limited_swap +no\n", table)
    assert re.search(r"\n  swap_controller +memory\.memsw only .*not usable by the kubelet", table)
    assert json.loads(render_json(report))["sections"]["cgroups"] == cgroups


def test_cgroup_v2_reports_its_usable_swap_controller() -> None:
    """On v2 with memory.swap.max the controller is named, usable for LimitedSwap."""
    report = build_report(AgentConfig(), "n1", facts(), LOGIND, NODE_ONLY)
    assert report.sections["cgroups"]["limited_swap"] is True
    assert "usable by the kubelet for LimitedSwap" in report.sections["cgroups"]["swap_controller"]


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
