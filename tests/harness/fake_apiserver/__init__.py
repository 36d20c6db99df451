"""A stateful fake Kubernetes API server for integration tests (a test double, not product code).

Start it with `FakeApiServer()` (context manager or start()/stop()), point the official client
at it with `api_client()` or `write_kubeconfig()`, arrange state in-process with `create()`,
`patch()`, `delete()`..., drive pods with `kubelet(node)`, script failures with `faults`, and
assert on `requests(...)`. See README.md.
"""

from .faults import FaultInjector, FaultRule
from .kubelet import FakeKubelet
from .requestlog import RecordedRequest
from .server import DEFAULT_TOKEN, FakeApiServer
from .status import ApiError

__all__ = [
    "DEFAULT_TOKEN",
    "ApiError",
    "FakeApiServer",
    "FakeKubelet",
    "FaultInjector",
    "FaultRule",
    "RecordedRequest",
]
