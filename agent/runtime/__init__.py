"""Process plumbing shared by both entrypoints: supervised root tasks, wiring context.

The clock every layer injects is ``agent.clock`` (plumbing, so adapters may import it too).
"""
