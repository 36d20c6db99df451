"""What a cycle decides (``shape``: the one JSON form every plan prints), where the evicted
pods would land (``destinations``), and how a plan prints as a table (``render``)."""
