"""Every request our two components send to any fake API server during a test session.

The components are told apart by the User-Agent each sets (``agent/kube/connection.py``):
requests from the tests' own clients, kubectl or the harness carry other agents and are not
counted. Only the RBAC attributes are kept (a few hundred distinct ones), with the first
test that sent each, so a failure can say where a request came from.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from agent.kube.connection import AGENT, DESCHEDULER, Component, user_agent
from tests.harness.fake_apiserver.requestlog import RecordedRequest

from .requestinfo import RequestAttributes, request_attributes

COMPONENTS: tuple[Component, ...] = (AGENT, DESCHEDULER)


def component_of(header: str | None) -> Component | None:
    """The component whose User-Agent ``header`` is, whatever the version."""
    for component in COMPONENTS:
        if (header or "").startswith(user_agent(component).split("/")[0] + "/"):
            return component
    return None


@dataclass
class SessionRequests:
    """What each component sent, and what a reader needs to trust the record."""

    sent: dict[Component, dict[RequestAttributes, str]] = field(
        default_factory=lambda: {component: {} for component in COMPONENTS}
    )
    current_test: str = ""
    incomplete: list[str] = field(default_factory=list)
    """Why the session did not run the whole integration suite (empty: it did)."""
    not_passed: list[str] = field(default_factory=list)
    """Integration tests that were skipped or failed: paths they cover may be missing."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def observe(self, entry: RecordedRequest) -> None:
        """Keep ``entry``'s RBAC attributes if one of our components sent it."""
        component = component_of(entry.header("User-Agent"))
        if component is None:
            return
        attributes = request_attributes(entry.method, entry.path, entry.query)
        if attributes is None:
            return
        with self._lock:
            self.sent[component].setdefault(attributes, self.current_test)

    def requests(self, component: Component) -> dict[RequestAttributes, str]:
        """Each request ``component`` sent, with the first test that sent it."""
        with self._lock:
            return dict(self.sent[component])


SESSION = SessionRequests()
"""The one record of this pytest session, filled by ``tests.harness.rbac.plugin``."""
