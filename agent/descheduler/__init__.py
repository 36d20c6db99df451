"""The central descheduler: upstream ``descheduler/v1alpha2`` policies, upstream's decisions.

Layers, each importing only those below it (import-linter contracts in ``pyproject.toml``):
``live`` (the process) and ``offline`` (``descheduler plan``), with their ``options``, feed
``cache`` (bytes -> model) into ``core`` (policy + snapshot -> plan, pure), which speaks
``plan`` about ``model``.
"""
