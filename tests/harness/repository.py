"""The repository's own files that tests read (docs, examples, manifests, fixtures), named
from one place: a test's depth in the tree never decides which file it reads."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
EXAMPLES = REPO / "examples"
MANIFESTS = REPO / "daemonset"
DESCHEDULER_FIXTURES = REPO / "tests" / "fixtures" / "descheduler"
"""The state upstream descheduler ran on, its policy, evictions and node classification."""
CLUSTER_1K = DESCHEDULER_FIXTURES / "cluster-1k.json.gz"
"""That state: 1,000 nodes and 30,024 pods, as one list of API objects."""
