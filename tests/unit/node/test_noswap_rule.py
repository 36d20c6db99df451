"""kubelet's tmpfs noswap rule, without the probe (the real probe is an integration test)."""

from agent.node.tmpfs import noswap_support


def test_kernel_6_4_and_later_is_supported_without_probing() -> None:
    """Kernel 6.4 is kubelet's threshold (the docs say 6.3; the code says 6.4)."""
    assert noswap_support((6, 4, 0), False, probe=False).supported
    assert noswap_support((6, 18, 44), False, probe=False).supported


def test_older_kernels_need_the_probe() -> None:
    """Below 6.4, without a probe, support is not assumed."""
    result = noswap_support((6, 3, 9), False, probe=False)
    assert not result.supported
    assert "probe" in result.reason


def test_user_namespace_wins_over_the_kernel_version() -> None:
    """In a user namespace the answer is no, even on a new kernel."""
    assert not noswap_support((6, 8, 0), True).supported
