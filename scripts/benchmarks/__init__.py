"""The benchmarks behind BENCHMARKS.md (``scripts/bench`` runs them, ``python -m
scripts.benchmarks.<name>`` one of them)."""
