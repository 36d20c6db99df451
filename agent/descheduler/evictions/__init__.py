"""Carrying a plan out: the live evictor (policy/v1 Evictions through a bounded pool)."""
