"""Every object the base and each overlay render is valid for a current Kubernetes release,
checked offline against that release's OpenAPI schemas with kubernetes-validate.

Strict mode: an unknown field fails (the API server would drop it, or reject it with
``fieldValidation=Strict``). The CRD itself is validated as an apiextensions/v1 object; its
custom resources (NodeReports) have no built-in schema, so they are checked against the
CRD's own OpenAPI schema in tests/integration/report/test_nodereport_crd.py instead.
"""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest

from tests.harness.kustomize import render, target_id, targets

KUBERNETES_VERSION = "1.37.0"
"""The newest release kubernetes-validate ships schemas for (and the fake API server's)."""


@pytest.mark.parametrize("target", [pytest.param(path, id=target_id(path)) for path in targets()])
def test_every_rendered_object_validates_against_the_release_schemas(target: Path) -> None:
    """No rendered object of the base or an overlay fails kubernetes-validate (strict);
    only custom resources of other projects, which it has no schema for, are let through."""
    problems = []
    for doc in render(target):
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            problems.append(f"{doc['kind']} {doc['metadata']['name']}: {error.message}")
        except kubernetes_validate.SchemaNotFoundError:
            # Another project's custom resource (e.g. the Prometheus operator's PodMonitor):
            # no built-in schema. A built-in kind without one is a typo in apiVersion/kind.
            if _built_in(doc["apiVersion"]):
                problems.append(f"{doc['kind']} {doc['apiVersion']}: no such built-in kind")
    assert not problems, "\n".join(problems)


def _built_in(api_version: str) -> bool:
    group = api_version.rpartition("/")[0]
    return "." not in group or group.endswith(".k8s.io")


def test_a_bad_field_fails_validation() -> None:
    """The check can fail: a misspelt container field in the rendered DaemonSet is reported."""
    (daemonset,) = [doc for doc in render() if doc["kind"] == "DaemonSet"]
    daemonset["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(daemonset, KUBERNETES_VERSION, strict=True)
