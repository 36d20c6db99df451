"""The pods the agent shuts down beside the real kubelet, and the ones it must leave alone.

Every container is busybox's shell as PID 1: it traps SIGTERM, appends ``start <time>`` to a
file of its own on the node (a hostPath), and on the TERM appends ``TERM <time>``
(``$EPOCHREALTIME``: Unix seconds with microseconds, the host's clock, as the agent's
``wall``), waits ``exit_after`` seconds (a pod's own clean-up) and exits. The file is named
``<namespace>_<pod>_<uid>_<container>.log`` (``figures.py`` reads it), so pods recreated
under the same name never mix.

- ``low-a``, ``low-b`` (two containers) and the Deployment ``web`` (2 replicas): priority 0,
  the first phase. ``web``'s replacements are what the scheduler would bind to the node
  during the shutdown if the taint were not there.
- ``mid-a``: PriorityClass ``bench-mid`` (100000), the second phase.
- ``crit-a`` (two containers) in kube-system: ``system-cluster-critical`` (2000000000), the
  last phase.
- The DaemonSet ``critical-agent`` in kube-system: ``system-node-critical``, labelled a
  critical component of the readiness gate (which it tolerates); left alone by the shutdown
  (``includeDaemonSetPods: false``). Its readiness probe fails while the file ``not-ready``
  exists in the hostPath, which is how the benchmark takes it out of Ready and back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.readiness.presets import CRITICAL_LABEL_VALUE, PRESETS
from scripts.benchmarks.kubeletnode.image import WORKLOAD_IMAGE
from tests.harness import kubeobjects

GATE = PRESETS["default"]
"""The readiness gate's keys (taint, critical label), as the agent's default preset has them."""
MID_CLASS, MID_PRIORITY = "bench-mid", 100000
NOT_READY_FILE = "not-ready"
HOST_MOUNT = "/host"
GRACE_SECONDS = 30
Manifest = dict[str, Any]


@dataclass(frozen=True)
class Container:
    name: str
    exit_after: float = 0.0
    """Seconds between the TERM and the exit (the container's own clean-up)."""


@dataclass(frozen=True)
class BarePod:
    namespace: str
    name: str
    containers: tuple[Container, ...]
    priority_class: str = ""


BARE_PODS = (
    BarePod("default", "low-a", (Container("app"),)),
    BarePod("default", "low-b", (Container("app"), Container("sidecar", exit_after=1.0))),
    BarePod("default", "mid-a", (Container("app", exit_after=0.5),), MID_CLASS),
    BarePod(
        "kube-system",
        "crit-a",
        (Container("app"), Container("sidecar", exit_after=0.5)),
        "system-cluster-critical",
    ),
)
DEPLOYMENT = ("default", "web", 2)
DAEMON_SET = ("kube-system", "critical-agent")


def command(container: Container, directory: str = HOST_MOUNT) -> list[str]:
    """The container's shell script: its start, then its TERM, each timed, to its own file
    in ``directory`` (the hostPath's mount)."""
    log = f"{directory}/${{POD_NAMESPACE}}_${{POD_NAME}}_${{POD_UID}}_{container.name}.log"
    # The trap first: a TERM right after the start line is still caught and logged.
    script = (
        f'log="{log}"; '
        f'trap \'echo "TERM $EPOCHREALTIME" >> "$log"; sleep {container.exit_after:g}; '
        "exit 0' TERM; "
        'echo "start $EPOCHREALTIME" >> "$log"; '
        "sleep 2147483647 & wait"
    )
    return ["sh", "-c", script]


def _field_env(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


_ENV = [
    _field_env("POD_NAMESPACE", "metadata.namespace"),
    _field_env("POD_NAME", "metadata.name"),
    _field_env("POD_UID", "metadata.uid"),
]


def container(
    each: Container,
    *,
    probe: list[str] | None = None,
    limits: dict[str, str] | None = None,
    script: list[str] | None = None,
    mounts: tuple[dict[str, str], ...] = (),
) -> Manifest:
    fields: dict[str, Any] = {
        "imagePullPolicy": "Never",
        "command": script or command(each),
        "env": _ENV,
        "volumeMounts": [{"name": "host", "mountPath": HOST_MOUNT}, *mounts],
    }
    if probe:
        fields["readinessProbe"] = {"exec": {"command": probe}, "periodSeconds": 1}
    return kubeobjects.container(each.name, WORKLOAD_IMAGE, limits=limits, fields=fields)


def _host_volume(host_dir: str) -> dict[str, Any]:
    return {"name": "host", "hostPath": {"path": host_dir, "type": "Directory"}}


_QUIET = {"enableServiceLinks": False, "automountServiceAccountToken": False}
"""No service links, no token volume: nothing in these pods talks to the API server."""


def bare_pod(pod: BarePod, host_dir: str) -> Manifest:
    return kubeobjects.pod(
        pod.name,
        namespace=pod.namespace,
        labels={"bench": "bare"},
        containers=[container(each) for each in pod.containers],
        priority_class=pod.priority_class or None,
        grace_seconds=GRACE_SECONDS,
        volumes=[_host_volume(host_dir)],
        spec=_QUIET,
    )


def deployment(host_dir: str) -> Manifest:
    namespace, name, replicas = DEPLOYMENT
    template = kubeobjects.pod(
        name,
        namespace=namespace,
        labels={"app": name},
        containers=[container(Container("app"))],
        grace_seconds=GRACE_SECONDS,
        volumes=[_host_volume(host_dir)],
        spec=_QUIET,
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": template["spec"]},
        },
    }


def daemon_set(host_dir: str) -> Manifest:
    """Critical (the gate waits for it), tolerating the gate's taint as it must."""
    namespace, name = DAEMON_SET
    critical = {GATE.label: CRITICAL_LABEL_VALUE}
    probe = ["sh", "-c", f"test ! -e {HOST_MOUNT}/{NOT_READY_FILE}"]
    built = kubeobjects.daemon_set(
        name,
        namespace=namespace,
        labels=critical,
        containers=[container(Container("agent"), probe=probe)],
        tolerations=[kubeobjects.taint(GATE.taint) | {"operator": "Exists"}],
        spec={
            **_QUIET,
            "priorityClassName": "system-node-critical",
            "terminationGracePeriodSeconds": GRACE_SECONDS,
            "volumes": [_host_volume(host_dir)],
        },
    )
    built["spec"]["template"]["metadata"]["labels"].update(critical)
    return built


def burner(host_dir: str, *, cpu: str, memory_mib: int) -> Manifest:
    """A pod with a known use: one busy loop capped at ``cpu`` by its limit, and
    ``memory_mib`` MiB written to a memory-backed emptyDir (charged to its cgroup)."""
    script = [
        "sh",
        "-c",
        f"dd if=/dev/zero of=/fill/data bs=1048576 count={memory_mib} 2>/dev/null; "
        "while :; do :; done",
    ]
    burn = container(
        Container("burn"),
        limits={"cpu": cpu, "memory": f"{memory_mib * 2}Mi"},
        script=script,
        mounts=({"name": "fill", "mountPath": "/fill"},),
    )
    return kubeobjects.pod(
        "burner",
        containers=[burn],
        grace_seconds=1,
        volumes=[_host_volume(host_dir), {"name": "fill", "emptyDir": {"medium": "Memory"}}],
        spec=_QUIET,
    )
