"""Process plumbing shared by both entrypoints: clocks, supervised root tasks, wiring context."""
