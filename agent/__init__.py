"""kubelet-companion: a per-node agent beside the kubelet, and a thin central descheduler.

The package is layered (see docs/architecture.md): entrypoints wire capabilities, capabilities keep
their decisions in pure cores, and adapters (``kube``, ``logind``, ``node``) hold all I/O.
"""

from importlib import metadata

try:
    __version__ = metadata.version("kubelet-companion")
except metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

DOMAIN = "kubelet-companion.io"
"""The one label, taint and annotation domain for every key the product owns."""
