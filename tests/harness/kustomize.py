"""The shipped manifests as the cluster would get them: ``kubectl kustomize`` of the base and
of each overlay (kubectl's built-in kustomize, the one ``kubectl apply -k`` uses).

Tests read the rendered objects rather than the files, so they see what generators, name
hashes, image tags and patches make of them. Without kubectl they skip and say so.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.config import AgentConfig
from agent.config.loader import parse_document

MANIFESTS = Path(__file__).resolve().parents[2] / "daemonset"
BASE = MANIFESTS / "base"
KUBECTL = shutil.which("kubectl")
NAMESPACE = "kubelet-companion"
AGENT_ACCOUNT = "kubelet-companion-agent"
AGENT_CONFIG = "kubelet-companion-agent"
"""The agent's ConfigMap, before its generator's hash."""
DESCHEDULER_ACCOUNT = "kubelet-companion-descheduler"
JSON = dict[str, Any]


def overlays() -> list[Path]:
    """Every overlay: each directory under daemonset/ (but base) holding a kustomization."""
    return sorted(
        path.parent
        for path in MANIFESTS.rglob("kustomization.yaml")
        if path.parent != BASE and not path.parent.is_relative_to(BASE)
    )


def targets() -> list[Path]:
    """The base and every overlay."""
    return [BASE, *overlays()]


def target_id(path: Path) -> str:
    return str(path.relative_to(MANIFESTS))


def need_kubectl() -> str:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed: it renders the kustomizations")
    return KUBECTL


@functools.cache
def _render(directory: Path) -> str:
    kubectl = need_kubectl()
    result = subprocess.run(
        [kubectl, "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, f"kubectl kustomize {directory}: {result.stderr}"
    return result.stdout


@functools.cache
def _parsed(directory: Path) -> str:
    """The rendered objects, parsed once per process (as JSON text, so that every caller
    gets a fresh copy to change). libyaml's safe loader where PyYAML has it: the pure-Python
    one took most of the manifest tests' time, parsing the same text again for each."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return json.dumps([doc for doc in yaml.load_all(_render(directory), Loader=loader) if doc])


def render(directory: Path = BASE) -> list[JSON]:
    """The objects ``kubectl kustomize directory`` renders (fresh copies on each call)."""
    documents: list[JSON] = json.loads(_parsed(directory))
    return documents


def generated(name: str, rendered: str) -> bool:
    """Whether ``rendered`` is ``name`` or ``name`` with a generator's content hash."""
    return (
        rendered == name or re.fullmatch(rf"{re.escape(name)}-[a-z0-9]{{10}}", rendered) is not None
    )


def one(docs: list[JSON], kind: str, name: str) -> JSON:
    """The single object of ``kind`` named ``name`` (a generated one: with its hash)."""
    found = [
        doc for doc in docs if doc["kind"] == kind and generated(name, doc["metadata"]["name"])
    ]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def agent_config(docs: list[JSON]) -> tuple[str, AgentConfig]:
    """The rendered agent ConfigMap's name (with its hash) and its ``agent.yaml``, loaded by
    the agent's own config loader."""
    (config_map,) = [
        doc
        for doc in docs
        if doc["kind"] == "ConfigMap" and generated(AGENT_CONFIG, doc["metadata"]["name"])
    ]
    name = config_map["metadata"]["name"]
    return name, parse_document(AgentConfig, config_map["data"]["agent.yaml"], name)
