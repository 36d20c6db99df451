"""LowNodeUtilization and HighNodeUtilization: one folder because they share the node
classification and the eviction loop (``common``), as upstream's ``nodeutilization`` does."""
