"""Which node the agent's credentials name, read from its service-account token.

Why: the admission policy in ``daemonset/base/admission-policy.yaml`` denies every write of
the agent's account whose credentials name no node, or name another node than the object it
writes. The API server takes that node from the token (``authentication.kubernetes.io/
node-name`` in the user's extra, from the token's ``kubernetes.io.node`` claim: a pod-bound
token since Kubernetes 1.30, a token bound to the Node object). An agent whose token names no
node, or another one, still reads everything and fails every write with a 403; saying so
once at start and in ``doctor`` turns that into one clear line instead of a stream of
refused patches.

The token is decoded, not verified: the API server verifies it; this only reads what it will
find. A kubeconfig without a bearer token (a client certificate, an exec plugin that has not
run) gives ``None``: nothing to say.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s_client

AGENT_USERNAME = "system:serviceaccount:kubelet-companion:kubelet-companion-agent"
BIND_TO_NODE_COMMAND = (
    "kubectl create token kubelet-companion-agent -n kubelet-companion "
    "--bound-object-kind Node --bound-object-name {node}"
)


@dataclass(frozen=True)
class TokenClaims:
    """The claims of a service-account token that say who and where."""

    subject: str
    node_name: str = ""
    node_uid: str = ""
    pod_name: str = ""
    expires: float | None = None
    """Unix time of ``exp``; ``None`` when the token has none."""

    def describe(self) -> str:
        """One line for logs and ``doctor``: the account, what it is bound to, its expiry."""
        bound = (
            f"pod {self.pod_name} on node {self.node_name or '?'}"
            if self.pod_name
            else (f"node {self.node_name}" if self.node_name else "no node")
        )
        expiry = ""
        if self.expires is not None:
            expiry = ", expires " + time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.expires))
        return f"token of {self.subject or '?'} bound to {bound}{expiry}"


def decode_token(token: str) -> TokenClaims | None:
    """The claims of a JWT (unverified); ``None`` when ``token`` is not one."""
    parts = token.strip().split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(payload, dict):
        return None
    kubernetes = _mapping(payload.get("kubernetes.io"))
    node, pod = _mapping(kubernetes.get("node")), _mapping(kubernetes.get("pod"))
    expires = payload.get("exp")
    return TokenClaims(
        subject=str(payload.get("sub") or ""),
        node_name=str(node.get("name") or ""),
        node_uid=str(node.get("uid") or ""),
        pod_name=str(pod.get("name") or ""),
        expires=float(expires) if isinstance(expires, int | float) else None,
    )


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def bearer_token(api_client: k8s_client.ApiClient) -> str | None:
    """The bearer token the client sends (kubeconfig or in-cluster), if it sends one."""
    value = (api_client.configuration.api_key or {}).get("BearerToken")
    if not value:
        return None
    scheme, _, token = str(value).partition(" ")
    return token if scheme.lower() == "bearer" and token else str(value)


def node_binding_problem(
    claims: TokenClaims | None, node_name: str, *, now: float | None = None
) -> str | None:
    """Why the own-node admission policy will deny this agent's writes, or ``None``.

    Only the agent's own account is judged: another account is not matched by the policy
    (and has whatever RBAC it has)."""
    if claims is None or claims.subject != AGENT_USERNAME:
        return None
    hint = BIND_TO_NODE_COMMAND.format(node=node_name)
    if claims.expires is not None and claims.expires <= (time.time() if now is None else now):
        return f"the agent's token has expired ({claims.describe()}): create a new one ({hint})"
    if not claims.node_name:
        return (
            f"the agent's token names no node ({claims.describe()}): where the own-node "
            "admission policy is installed (the base installs it) it denies every write (reads "
            "still work); run the agent with its pod's token "
            f"(Kubernetes 1.30+) or a token bound to this Node ({hint})"
        )
    if claims.node_name != node_name:
        return (
            f"the agent runs as node {node_name} but its token is bound to node "
            f"{claims.node_name}: where the own-node admission policy is installed it denies its "
            f"writes to "
            f"{node_name}'s objects; set NODE_NAME (or nodeName) to {claims.node_name}, or use "
            f"a token bound to {node_name} ({hint})"
        )
    return None
