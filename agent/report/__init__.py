"""NodeReport: this node's real usage, swap, readiness and shutdown state, for the descheduler."""
