"""Service-account tokens shaped as the API server issues them (KEP-4193 claims), unsigned.

Only the payload matters to what reads them here (the agent's ``tokenclaims``, the install
script): the signature is the API server's to check, so it is a placeholder.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

AGENT_SUBJECT = "system:serviceaccount:kubelet-companion:kubelet-companion-agent"


def _part(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def jwt(payload: dict[str, Any]) -> str:
    """A JWT with ``payload`` and a placeholder signature."""
    return f"{_part({'alg': 'RS256', 'kid': 'test'})}.{_part(payload)}.c2lnbmF0dXJl"


def service_account_token(
    *,
    subject: str = AGENT_SUBJECT,
    node: str | None = None,
    pod: str | None = None,
    expires_in: float = 30 * 24 * 3600,
    now: float | None = None,
) -> str:
    """A token of ``subject``: bound to ``pod`` (with ``node`` as its node, as since 1.30),
    or to the Node ``node`` alone (``kubectl create token --bound-object-kind Node``), or to
    nothing; ``expires_in`` seconds from ``now``."""
    issued = time.time() if now is None else now
    namespace, _, _ = subject.removeprefix("system:serviceaccount:").partition(":")
    kubernetes: dict[str, Any] = {
        "namespace": namespace,
        "serviceaccount": {"name": subject.rsplit(":", 1)[-1], "uid": "uid-sa"},
    }
    if node is not None:
        kubernetes["node"] = {"name": node, "uid": f"uid-{node}"}
    if pod is not None:
        kubernetes["pod"] = {"name": pod, "uid": f"uid-{pod}"}
    return jwt(
        {
            "aud": ["https://kubernetes.default.svc"],
            "exp": int(issued + expires_in),
            "iat": int(issued),
            "iss": "https://kubernetes.default.svc",
            "jti": "0d4691ed-659b-4935-a832-355f77ee47cc",
            "kubernetes.io": kubernetes,
            "nbf": int(issued),
            "sub": subject,
        }
    )
