"""kubectl accepts every shipped manifest (daemonset/*.yaml) in a client-side dry run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness.fake_apiserver import FakeApiServer

MANIFESTS = Path(__file__).resolve().parents[3] / "daemonset"
KUBECTL = shutil.which("kubectl")


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
@pytest.mark.parametrize(
    "manifest",
    [pytest.param(path, id=path.name) for path in sorted(MANIFESTS.glob("*.yaml"))],
)
def test_kubectl_creates_the_manifest_in_a_client_dry_run(
    manifest: Path, fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """`kubectl create --dry-run=client -f` maps and builds every object of the file.

    kubectl needs API discovery to map kinds to resources, so it talks to the fake API
    server (which serves discovery for every kind we ship). The fake serves no OpenAPI
    document, so kubectl's schema validation is off (`--validate=false`); the field-level
    checks live in tests/unit/manifests.
    """
    assert KUBECTL is not None
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    result = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), "create", "--dry-run=client",
         "--validate=false", "-f", str(manifest), "-o", "name"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    created = result.stdout.split()
    assert created, "kubectl created nothing"
    assert all("/" in name for name in created), created
