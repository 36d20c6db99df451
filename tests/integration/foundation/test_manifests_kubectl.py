"""kubectl accepts every shipped kustomization (daemonset/base and each overlay) in a
client-side dry run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.harness.fake_apiserver import FakeApiServer
from tests.harness.kustomize import need_kubectl, target_id, targets


@pytest.mark.parametrize("target", [pytest.param(path, id=target_id(path)) for path in targets()])
def test_kubectl_creates_the_kustomization_in_a_client_dry_run(
    target: Path, fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """`kubectl create --dry-run=client -k` maps and builds every object it renders.

    kubectl needs API discovery to map kinds to resources, so it talks to the fake API
    server (which serves discovery for every kind we ship). The fake serves no OpenAPI
    document, so kubectl's schema validation is off (`--validate=false`); the schemas are
    checked offline in tests/unit/manifests.
    """
    kubectl = need_kubectl()
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    result = subprocess.run(
        [kubectl, "--kubeconfig", str(kubeconfig), "create", "--dry-run=client",
         "--validate=false", "-k", str(target), "-o", "name"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    created = result.stdout.split()
    assert created, "kubectl created nothing"
    assert all("/" in name for name in created), created
