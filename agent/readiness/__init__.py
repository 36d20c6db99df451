"""The readiness capability: a pure core plus a thin controller (see README)."""
