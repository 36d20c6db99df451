"""``descheduler plan``: the whole cycle on a snapshot file, with destinations."""
