"""One key of one Secret, read fresh: the Prometheus bearer token a policy names.

A single GET of the named Secret (RBAC can grant exactly that one, by name) at each use, so
a rotated token is used from the next query on, as upstream's watch of the Secret would.
"""

from __future__ import annotations

import base64
import binascii

from agent.kube.api import KubeApi
from agent.kube.resources import SECRETS


def secret_value(api: KubeApi, namespace: str, name: str, key: str) -> str:
    """The decoded value of ``data[key]`` ("" when absent or empty); ``NotFound`` when the
    Secret is not there."""
    secret = api.get(SECRETS, name, namespace)
    data = secret.get("data") or {}
    encoded = data.get(key) if isinstance(data, dict) else None
    if not isinstance(encoded, str):
        return ""
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8").strip()
    except (binascii.Error, UnicodeDecodeError):
        return ""
