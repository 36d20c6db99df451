"""Matching rules more than one plugin applies, each as upstream's helpers apply it."""
