"""doctor's logind facts from a real logind: kubelet's shutdown delay lock is seen and named."""

from __future__ import annotations

from agent.logind.bus import connect_system_bus
from agent.logind.facts import kubelet_shutdown_delay_locks, read_logind_facts
from agent.logind.manager import LogindManager
from tests.harness.logind import LogindHarness


async def test_a_shutdown_delay_lock_held_by_kubelet_is_in_the_facts(
    logind_harness: LogindHarness,
) -> None:
    """A delay lock on shutdown taken as "kubelet" is listed; a sleep lock by kubelet is not."""
    bus = await connect_system_bus(5.0)
    manager = LogindManager(bus, 5.0)
    shutdown = await manager.inhibit("shutdown", "kubelet", "Kubelet needs time", "delay")
    sleep = await manager.inhibit("sleep", "kubelet", "Kubelet needs time", "delay")
    try:
        facts = await read_logind_facts(timeout=5.0)
    finally:
        shutdown.close()
        sleep.close()
        bus.disconnect()
    assert facts.present
    (lock,) = kubelet_shutdown_delay_locks(facts.inhibitors)
    assert (lock.what, lock.who, lock.mode) == ("shutdown", "kubelet", "delay")
