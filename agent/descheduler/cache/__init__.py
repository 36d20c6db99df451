"""Bytes to the model: the only code that knows the wire shape.

The live caches (``state``: one list+watch per kind) and the snapshot file (``snapshotfile``)
decode through the same structs (``wire``, ``podlist``) and projections (``projection``),
share equal parts (``sharing``), refuse hostile shapes (``shapes``), and judge the agents'
NodeReports (``usage``).
"""
