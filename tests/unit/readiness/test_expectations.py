"""After our write, the write's result is trusted until the Node watch catches up."""

from __future__ import annotations

from agent.readiness.expectations import WriteExpectation
from tests.harness.readiness_objects import node

STALE = node(resource_version="10")
WRITTEN = node(taints=[], resource_version="11")


def test_the_written_node_stands_in_for_a_stale_cache() -> None:
    """Until the watch delivers our resourceVersion, the cache's older Node is ignored."""
    expectation = WriteExpectation()
    expectation.expect(WRITTEN, now=0)
    expectation.observe("MODIFIED", node(resource_version="10"))
    assert expectation.current(STALE, now=1) is WRITTEN


def test_seeing_our_version_hands_back_to_the_cache() -> None:
    """Once the watch shows our resourceVersion, the cache is current again."""
    expectation = WriteExpectation()
    expectation.expect(WRITTEN, now=0)
    expectation.observe("MODIFIED", node(taints=[], resource_version="11"))
    assert expectation.current(STALE, now=1) is STALE
    assert not expectation.pending


def test_a_relist_clears_the_expectation() -> None:
    """A relist (SYNCED) replaces the cache wholesale, so it is at least as new as our write."""
    expectation = WriteExpectation()
    expectation.expect(WRITTEN, now=0)
    expectation.observe("SYNCED", None)
    assert expectation.current(STALE, now=1) is STALE


def test_an_expectation_expires() -> None:
    """A watch that never shows our write cannot pin the view forever."""
    expectation = WriteExpectation(max_age=5)
    expectation.expect(WRITTEN, now=0)
    assert expectation.current(STALE, now=4) is WRITTEN
    assert expectation.current(STALE, now=6) is STALE


def test_a_write_the_watch_already_delivered_is_not_expected() -> None:
    """The watch event may beat the PATCH result to the loop: then the cache is trusted."""
    expectation = WriteExpectation()
    written = {"metadata": {"resourceVersion": "5"}}
    newer = {"metadata": {"resourceVersion": "6"}}
    expectation.observe("MODIFIED", written)
    expectation.observe("MODIFIED", newer)
    expectation.expect(written, now=0.0)
    assert not expectation.pending
    assert expectation.current(newer, now=1.0) is newer


def test_a_cache_showing_our_write_ends_the_expectation() -> None:
    """Once the cached Node carries our write's resourceVersion, the cache is used."""
    expectation = WriteExpectation()
    written = {"metadata": {"resourceVersion": "5"}, "spec": {}}
    expectation.expect(written, now=0.0)
    cached = {"metadata": {"resourceVersion": "5"}, "spec": {"taints": []}}
    assert expectation.current(cached, now=1.0) is cached
    assert not expectation.pending
