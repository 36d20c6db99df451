"""The shutdown capability: a pure core plus a thin controller (see docs/shutdown.md)."""
