"""The benchmarks' own tests: their rules and renderers on hand-made records (no benchmark runs)."""
