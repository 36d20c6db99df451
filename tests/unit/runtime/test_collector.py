"""The cyclic garbage collector is paused for a block and left as it was found."""

import gc
from collections.abc import Iterator

import pytest

from agent.runtime.collector import collector_paused


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_is_off_inside_and_on_after() -> None:
    """Inside the block no cyclic collection runs; after it the collector is back on."""
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_error_in_the_block_still_turns_it_back_on() -> None:
    """A block that raises does not leave the process without its collector."""
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError
    assert gc.isenabled()


def test_a_pause_inside_a_pause_leaves_it_off() -> None:
    """An inner pause restores what it found (off), so the outer pause still holds."""
    with collector_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
