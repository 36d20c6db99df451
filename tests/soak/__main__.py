"""``python -m tests.soak`` (what ``scripts/soak`` runs)."""

import sys

from tests.soak.cli import main

sys.exit(main())
