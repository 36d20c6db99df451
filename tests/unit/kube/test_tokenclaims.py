"""Reading which node the agent's token names, and saying why the own-node admission policy
would deny its writes: no node, another node, an expired token; nothing for other accounts
or credentials that are not a service-account token."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from kubernetes import client as k8s_client

from agent.kube.tokenclaims import (
    AGENT_USERNAME,
    TokenClaims,
    bearer_token,
    decode_token,
    node_binding_problem,
)
from tests.harness.tokens import jwt

NOW = 1_780_000_000.0


def claims(*, node: str | None = None, pod: str | None = None, exp: float = NOW + 3600) -> dict:
    kubernetes: dict[str, Any] = {"namespace": "kubelet-companion"}
    if node is not None:
        kubernetes["node"] = {"name": node, "uid": "uid-" + node}
    if pod is not None:
        kubernetes["pod"] = {"name": pod, "uid": "uid-" + pod}
    return {"sub": AGENT_USERNAME, "exp": int(exp), "kubernetes.io": kubernetes}


def test_a_node_bound_token_names_its_node_and_uid() -> None:
    """The kubernetes.io.node claim of a Node-bound token is read, with its expiry."""
    decoded = decode_token(jwt(claims(node="node-a")))
    assert decoded == TokenClaims(AGENT_USERNAME, "node-a", "uid-node-a", "", NOW + 3600)
    assert decoded.describe().startswith(f"token of {AGENT_USERNAME} bound to node node-a, ")


def test_a_pod_bound_token_names_its_pod_and_node() -> None:
    """A pod-bound token (Kubernetes 1.30+) carries both the pod and the node it runs on."""
    decoded = decode_token(jwt(claims(node="node-a", pod="agent-x7k2p")))
    assert decoded is not None
    assert (decoded.pod_name, decoded.node_name) == ("agent-x7k2p", "node-a")
    assert "bound to pod agent-x7k2p on node node-a" in decoded.describe()


@pytest.mark.parametrize(
    "token",
    [
        pytest.param("", id="empty"),
        pytest.param("abcdef", id="opaque"),
        pytest.param("a.%%%.c", id="bad-base64"),
        pytest.param("a." + base64.urlsafe_b64encode(b"[1]").decode() + ".c", id="not-an-object"),
    ],
)
def test_what_is_not_a_jwt_gives_none(token: str) -> None:
    """A static or opaque token is not decoded: there is nothing to say about its node."""
    assert decode_token(token) is None


@pytest.mark.parametrize(
    ("payload", "node", "expected"),
    [
        pytest.param(claims(node="node-a"), "node-a", None, id="own-node"),
        pytest.param(claims(node="node-a", pod="p"), "node-a", None, id="pod-token-own-node"),
        pytest.param(claims(pod="p"), "node-a", "names no node", id="no-node"),
        pytest.param(claims(node="node-b"), "node-a", "bound to node node-b", id="other-node"),
        pytest.param(claims(node="node-a", exp=NOW - 1), "node-a", "has expired", id="expired"),
        pytest.param(
            {**claims(), "sub": "system:serviceaccount:x:y"}, "node-a", None, id="other-account"
        ),
    ],
)
def test_node_binding_problems(payload: dict, node: str, expected: str | None) -> None:
    """Only the agent's own account is judged; its token must name this node, unexpired, and
    each problem names the command that makes a Node-bound token."""
    problem = node_binding_problem(decode_token(jwt(payload)), node, now=NOW)
    if expected is None:
        assert problem is None
    else:
        assert problem is not None
        assert expected in problem
        assert "--bound-object-kind Node --bound-object-name node-a" in problem


def test_no_token_is_no_problem() -> None:
    """Credentials that are not a service-account token (a client certificate) say nothing."""
    assert node_binding_problem(None, "node-a") is None


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        pytest.param("Bearer abc.def.ghi", "abc.def.ghi", id="kubeconfig"),
        pytest.param("bearer abc.def.ghi", "abc.def.ghi", id="in-cluster"),
        pytest.param(None, None, id="client-certificate"),
    ],
)
def test_the_bearer_token_is_taken_as_the_client_sends_it(
    stored: str | None, expected: str | None
) -> None:
    """The official client keeps the header value ("Bearer ..." from a kubeconfig, "bearer
    ..." in-cluster); the token is what follows the scheme."""
    configuration = k8s_client.Configuration()
    if stored is not None:
        configuration.api_key["BearerToken"] = stored
    api_client = k8s_client.ApiClient(configuration)
    try:
        assert bearer_token(api_client) == expected
    finally:
        api_client.close()
