"""Every input file is bounded by the bytes *read*: a FIFO or ``/dev/zero`` reports a size of
0 and then gives bytes without end, so a limit that trusts ``stat`` holds for none of them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.config import ConfigError, load_agent_config, read_yaml
from agent.config.boundedread import MAX_CONFIG_BYTES, read_limited
from agent.descheduler.offline.schedulerconfig import load_scheduler_config
from agent.descheduler.policyfile import load_policy
from agent.node.kubeletconfig import KubeletConfigError, read_kubelet_eviction
from tests.harness.fifo import fed_fifo

HINT = "raise --some-flag to read it"


def _refusal(error: ConfigError) -> str:
    assert len(error.errors) == 1
    return str(error.errors[0])


def test_a_regular_file_within_the_limit_is_read_whole(tmp_path: Path) -> None:
    """The baseline: a file of exactly the limit is read."""
    path = tmp_path / "in.json"
    path.write_bytes(b"x" * 100)
    assert read_limited(path, 100, hint=HINT) == b"x" * 100


def test_a_regular_file_over_the_limit_is_refused_unread(tmp_path: Path) -> None:
    """Its size says so: refused before a byte is read, the file, limit and remedy named."""
    path = tmp_path / "in.json"
    path.write_bytes(b"x" * 101)
    with pytest.raises(ConfigError) as raised:
        read_limited(path, 100, hint=HINT)
    assert raised.value.source == str(path)
    assert _refusal(raised.value) == f"larger than 100 bytes: refused unread; {HINT}"


def test_dev_zero_is_refused_once_past_the_limit() -> None:
    """``/dev/zero`` says it holds 0 bytes and never ends: refused after ``limit`` bytes."""
    with pytest.raises(ConfigError) as raised:
        read_limited("/dev/zero", 1000, hint=HINT)
    assert raised.value.source == "/dev/zero"
    assert _refusal(raised.value) == (
        f"larger than 1000 bytes: refused after reading 1000 bytes; {HINT}"
    )


def test_a_fifo_within_the_limit_is_read_whole(tmp_path: Path) -> None:
    """What ``<(...)`` gives: read to its end, larger than one read, within the limit."""
    data = bytes(range(256)) * 40_000  # 10 MB, several reads
    with fed_fifo(tmp_path / "fifo", data) as fifo:
        assert read_limited(fifo, len(data), hint=HINT) == data


def test_a_fifo_over_the_limit_is_refused(tmp_path: Path) -> None:
    """A FIFO one byte over the limit is refused, however small ``stat`` says it is."""
    with fed_fifo(tmp_path / "fifo", b"y" * 5001) as fifo, pytest.raises(ConfigError) as raised:
        read_limited(fifo, 5000, hint=HINT)
    assert "larger than 5000 bytes: refused after reading 5000 bytes" in _refusal(raised.value)


def test_a_limit_below_one_byte_is_a_programming_error(tmp_path: Path) -> None:
    """0 is no limit and no "unlimited": callers refuse it before they read."""
    with pytest.raises(ValueError, match="at least 1 byte"):
        read_limited(tmp_path, 0, hint=HINT)


READERS: list[Any] = [
    pytest.param(read_yaml, id="yaml-reader"),
    pytest.param(load_agent_config, id="agent-config"),
    pytest.param(load_policy, id="policy"),
    pytest.param(load_scheduler_config, id="scheduler-config"),
]


@pytest.mark.parametrize("read", READERS)
def test_every_config_file_is_bounded_on_dev_zero(read: Callable[[str], Any]) -> None:
    """The agent's config, the policy and ``--scheduler-config`` stop at
    ``MAX_CONFIG_BYTES``: a ``ConfigError`` (exit 2), not a ``MemoryError`` traceback."""
    with pytest.raises(ConfigError) as raised:
        read("/dev/zero")
    reason = _refusal(raised.value)
    assert reason.startswith(f"larger than {MAX_CONFIG_BYTES} bytes: refused after reading")
    assert "the limit is fixed" in reason


def test_kubelets_config_is_bounded_on_dev_zero() -> None:
    """kubelet's config file, read for the swap guide, is bounded the same way."""
    with pytest.raises(KubeletConfigError, match=f"larger than {MAX_CONFIG_BYTES} bytes"):
        read_kubelet_eviction(Path("/dev/zero"))


SCHEDULER = b"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.mark.parametrize(
    ("read", "document"),
    [
        pytest.param(read_yaml, b"a: 1\n", id="yaml-reader"),
        pytest.param(load_agent_config, b"{}\n", id="agent-config"),
        pytest.param(load_policy, b"kind: DeschedulerPolicy\n", id="policy"),
        pytest.param(load_scheduler_config, SCHEDULER, id="scheduler-config"),
    ],
)
def test_every_config_file_is_read_from_a_fifo(
    tmp_path: Path, read: Callable[[Path], Any], document: bytes
) -> None:
    """A config handed over as ``<(...)`` is read like a file."""
    with fed_fifo(tmp_path / "fifo", document) as fifo:
        assert read(fifo) is not None
