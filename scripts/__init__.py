"""The project's scripts. The Python ones are modules, run from the repository as
``python -m scripts.<name>`` (``scripts/bench`` and the others do that), so they import the
product and the test harness (``tests.harness``) as packages; nothing under ``tests/``
imports them. Their own tests live beside them (``scripts/benchmarks/tests``)."""
