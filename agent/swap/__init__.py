"""The swap capability: a pure core plus a thin controller (see docs/swap.md)."""
