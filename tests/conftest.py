"""Fixtures shared by every test: the harnesses live in ``tests/harness``."""

pytest_plugins = [
    "tests.harness.logstate",
    "tests.harness.swapfile",
    "tests.harness.fake_apiserver.fixtures",
    "tests.harness.logind.fixtures",
    # Records every request the agent and the descheduler send, for the RBAC proof.
    "tests.harness.rbac.plugin",
]
