"""The soak (issue 14): randomized scenarios of shutdowns and readiness under faults.

Real parts only: systemd-logind on a private bus, the fake API server over HTTP, and the
agent as a process of its own. ``scripts/soak`` runs it (``cli.py``); ``test_soak.py`` runs
a short one in the suite. Plans in ``plan.py``, the run in ``scenario.py``, the observers
in ``observe.py``, the rules in ``invariants.py``.
"""
