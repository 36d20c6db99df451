"""``kubelet-companion doctor``: one look at this node and the config, with warnings."""
