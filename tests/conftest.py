"""Fixtures shared by every test: the harnesses live in ``tests/harness``."""

pytest_plugins = [
    "tests.harness.swapfile",
    "tests.harness.fake_apiserver.fixtures",
    "tests.harness.logind.fixtures",
]
