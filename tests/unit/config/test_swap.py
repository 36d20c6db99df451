"""The memorySwap config section: kubelet's names, our knobs, every bad field reported."""

import pytest

from agent.config import AgentConfig, ConfigError, parse_document


def test_defaults_are_kubelets_and_safe() -> None:
    """NoSwap, no enforcement, no taint, no system.slice changes by default."""
    swap = parse_document(AgentConfig, "", "t").memory_swap
    assert (swap.swap_behavior, swap.reserved_swap, swap.enforce) == ("NoSwap", 0, False)
    assert (swap.cgroup_driver, swap.cgroup_root) == ("auto", "/")
    assert not swap.taint_swap_nodes
    assert not swap.system_slice_no_swap
    assert not swap.pod_drift_events


def test_full_section_parses() -> None:
    """Quantities, durations and device lists load into typed values."""
    swap = parse_document(
        AgentConfig,
        """
memorySwap:
  swapBehavior: LimitedSwap
  reservedSwap: 1Gi
  cgroupDriver: systemd
  cgroupRoot: /kubelet
  enforce: true
  auditInterval: 10s
  systemSliceIoLatency: 50ms
  systemSliceIoLatencyDevices: ["8:0", "259:0"]
""",
        "t",
    ).memory_swap
    assert swap.reserved_swap == 2**30
    assert swap.audit_interval == 10.0
    assert swap.system_slice_io_latency == pytest.approx(0.05)
    assert swap.system_slice_io_latency_devices == ("8:0", "259:0")


def test_every_bad_field_is_reported_with_its_path() -> None:
    """One pass shows all problems in the section."""
    with pytest.raises(ConfigError) as caught:
        parse_document(
            AgentConfig,
            """
memorySwap:
  swapBehavior: UnlimitedSwap
  reservedSwap: -1Gi
  cgroupDriver: docker
  auditInterval: 0s
""",
            "t",
        )
    paths = sorted(error.path for error in caught.value.errors)
    assert paths == [
        "memorySwap.auditInterval",
        "memorySwap.cgroupDriver",
        "memorySwap.reservedSwap",
        "memorySwap.swapBehavior",
    ]


def test_cross_field_rules() -> None:
    """Relative or dotted cgroupRoot and malformed devices are rejected."""
    with pytest.raises(ConfigError) as caught:
        parse_document(
            AgentConfig,
            'memorySwap:\n  cgroupRoot: "/a/../b"\n  systemSliceIoLatencyDevices: ["sda"]\n',
            "t",
        )
    assert sorted(error.path for error in caught.value.errors) == [
        "memorySwap.cgroupRoot",
        "memorySwap.systemSliceIoLatencyDevices[0]",
    ]
