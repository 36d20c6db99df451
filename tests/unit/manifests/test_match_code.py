"""The manifests say what the code does: image, flags, config keys and files, ports, probe
paths and host paths in the rendered base and overlays agree with the package, its
argument parser, its config loader and its telemetry listener.

A manifest that drifts from the code fails here rather than in a cluster: a renamed flag
makes the parser reject the container's args, a renamed config key makes the loader reject
the ConfigMap, a moved metrics port leaves the probes knocking on a closed port.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

from agent import __version__
from agent.cli import build_parser
from agent.config import AgentConfig
from agent.config.loader import parse_document
from agent.descheduler.live.command import resolve_options
from agent.descheduler.policyfile import parse_policy_text
from agent.telemetry.health import Health
from agent.telemetry.http import TelemetryServer, split_host_port
from agent.telemetry.metrics import new_registry
from tests.harness.kustomize import JSON, NAMESPACE, render, target_id, targets
from tests.harness.localhttp import get

IMAGE = f"kubelet-companion:{__version__}"
EVERY_INTERFACE = "0.0.0.0"  # noqa: S104 - what the pods must bind, so probes reach them


def _pod_specs(docs: list[JSON]) -> Iterator[tuple[str, JSON]]:
    """(kind/name, pod spec) of every workload."""
    for doc in docs:
        spec = doc.get("spec") or {}
        if doc["kind"] == "CronJob":
            spec = spec["jobTemplate"]["spec"]
        if "template" in spec:
            yield f"{doc['kind']}/{doc['metadata']['name']}", spec["template"]["spec"]


def _workload(docs: list[JSON], command: str) -> tuple[JSON, JSON]:
    """(pod spec, container) of the one workload whose container runs ``command``."""
    found = [
        (pod, container)
        for _, pod in _pod_specs(docs)
        for container in pod["containers"]
        if container["args"][0] == command
    ]
    if not found:
        pytest.skip(f"this kustomization runs no {command}")
    assert len(found) == 1, f"expected one {command} container, found {len(found)}"
    return found[0]


def _mounted_file(docs: list[JSON], pod: JSON, container: JSON, path: str) -> str:
    """The content of the ConfigMap key the container sees at ``path``."""
    target = PurePosixPath(path)
    for mount in container["volumeMounts"]:
        if target.parent != PurePosixPath(mount["mountPath"]):
            continue
        (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
        name = volume["configMap"]["name"]
        (config_map,) = [
            doc for doc in docs if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == name
        ]
        assert config_map["metadata"]["namespace"] == NAMESPACE
        return str(config_map["data"][target.name])
    raise AssertionError(f"nothing is mounted at {target.parent}")


def _flag(args: list[str], flag: str) -> str:
    (value,) = [arg.split("=", 1)[1] for arg in args if arg.startswith(f"{flag}=")]
    return value


def _metrics_port(container: JSON) -> int:
    (port,) = [p["containerPort"] for p in container["ports"] if p["name"] == "metrics"]
    return int(port)


ALL_TARGETS = [pytest.param(path, id=target_id(path)) for path in targets()]


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_every_container_runs_this_packages_image(target: Path) -> None:
    """Every container's image is kubelet-companion tagged with the package's version."""
    images = {
        where: container["image"]
        for where, pod in _pod_specs(render(target))
        for container in pod["containers"]
    }
    if not images:
        pytest.skip("this kustomization runs no container")
    assert set(images.values()) == {IMAGE}, images


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_the_agent_args_and_config_are_what_the_code_accepts(target: Path) -> None:
    """The agent container's args parse with the CLI's parser, its --config file is the
    mounted ConfigMap key, and that file loads with the agent's config loader (every key
    known, every value valid) and matches the container's ports and mounts."""
    docs = render(target)
    pod, container = _workload(docs, "agent")
    args = build_parser().parse_args(container["args"])
    assert args.command == "agent"
    config = parse_document(
        AgentConfig, _mounted_file(docs, pod, container, args.config), args.config
    )
    host, port = split_host_port(str(config.metrics_bind_address))
    assert host == EVERY_INTERFACE, "probes and Prometheus reach the port from outside the pod"
    assert port == _metrics_port(container)
    annotations = next(doc for doc in docs if doc["kind"] == "DaemonSet")["spec"]["template"][
        "metadata"
    ]["annotations"]
    assert annotations["prometheus.io/port"] == str(port)
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert config.host_paths.proc in mounts
    assert config.host_paths.sys in mounts
    assert config.state_dir in mounts
    assert str(PurePosixPath(config.shutdown.logind_drop_in_path).parent) in mounts
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_the_descheduler_args_config_and_policy_are_what_the_code_accepts(
    target: Path, tmp_path: Path
) -> None:
    """The descheduler's args parse with the CLI's parser and resolve with its flag rules,
    its config and policy files are the mounted ConfigMap keys and load, and the metrics
    port is the one its config binds."""
    docs = render(target)
    pod, container = _workload(docs, "descheduler")
    argv = [arg.replace("$(POD_NAMESPACE)", NAMESPACE) for arg in container["args"]]
    args = build_parser().parse_args(argv)
    config_text = _mounted_file(docs, pod, container, args.config)
    policy = parse_policy_text(
        _mounted_file(docs, pod, container, args.policy_file), args.policy_file
    )
    assert policy.profiles
    config_file = tmp_path / "descheduler.yaml"
    config_file.write_text(config_text)
    args.config = str(config_file)
    resolved = resolve_options(args)
    assert resolved.policy_file == _flag(container["args"], "--policy-config-file")
    host, port = split_host_port(str(resolved.metrics_bind_address))
    assert host == EVERY_INTERFACE
    assert port == _metrics_port(container)
    # Leader election, and a cooldown's memory without it, use the Lease here: its Role's.
    assert resolved.lease_namespace == NAMESPACE
    if not resolved.leader_elect:
        assert resolved.descheduling_interval == 0, "a one-shot run, as a CronJob's"


@pytest.fixture(scope="session")
def telemetry() -> Iterator[str]:
    """The real telemetry listener, with every health check passing."""
    server = TelemetryServer("127.0.0.1:0", new_registry("agent"), Health())
    server.start()
    host, port = server.address
    yield f"http://{host}:{port}"
    server.close()


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_every_probe_asks_a_path_the_listener_serves_on_the_metrics_port(
    target: Path, telemetry: str
) -> None:
    """Each readiness and liveness probe is an HTTP GET on the named metrics port for a path
    the telemetry listener answers with 200 when healthy (an unknown path is 404)."""
    probes = [
        (container["name"], kind, container[kind])
        for _, pod in _pod_specs(render(target))
        for container in pod["containers"]
        for kind in ("readinessProbe", "livenessProbe")
        if kind in container
    ]
    if not probes:
        pytest.skip("this kustomization runs no container")
    for name, kind, probe in probes:
        assert probe["httpGet"]["port"] == "metrics", (name, kind)
        assert get(telemetry + probe["httpGet"]["path"])[0] == 200, (name, kind, probe)
    assert get(telemetry + "/nonexistent")[0] == 404
