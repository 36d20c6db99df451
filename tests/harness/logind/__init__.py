"""A real systemd-logind on a private system bus, for tests of the shutdown inhibitor logic.

See :class:`LogindHarness` (and the ``logind_harness`` fixture in ``fixtures``).
"""

from tests.harness.logind.harness import LogindHarness
from tests.harness.logind.login1_client import Inhibitor, Login1Signal
from tests.harness.logind.systemd1 import StartUnitBehaviour, Systemd1Call, Systemd1StandIn

__all__ = [
    "Inhibitor",
    "Login1Signal",
    "LogindHarness",
    "StartUnitBehaviour",
    "Systemd1Call",
    "Systemd1StandIn",
]
