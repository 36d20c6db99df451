"""One node's worth of pods and container cgroups, with drift and with attacks, for both drivers.

What it arranges (node: 16 GiB memory, 4 GiB swap, LimitedSwap):

- ``db``     Guaranteed, ``postgres`` at 0: in sync.
- ``web``    Burstable: ``app`` (1Gi/2Gi) at ``max``: drift, expected 268435456;
             ``sidecar`` (512Mi, no limit) at 134217728: in sync; ``migrate`` (init) finished,
             no cgroup; the pause sandbox's cgroup: unmapped; ``evil`` whose scope is a
             symlink into system.slice; ``linked`` whose ``memory.swap.max`` is a symlink to
             system.slice's.
- ``batch``  BestEffort, ``job`` at 4096: drift, expected 0.
- ``crafted`` claims the UID ``../../system.slice`` (mirror annotation) and the container ID
             ``containerd://../../system.slice``.
- ``hijack`` Burstable pod whose pod cgroup is a symlink to system.slice, which holds a
             scope named like its container.

After enforcement exactly two files may differ: ``app``'s and ``job``'s ``memory.swap.max``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.harness.cgroups import CgroupTreeBuilder, ContainerFixture, container_id, pod_object

JSON = dict[str, Any]
GUARANTEED = {"cpu": "1", "memory": "1Gi"}
EVIL = "../../system.slice"


@dataclass(frozen=True)
class Scenario:
    pods: list[JSON]
    drifted: dict[str, str]
    """Relative path of each drifted ``memory.swap.max`` -> the value enforcement must write."""
    in_sync: tuple[str, ...]
    unmapped: tuple[str, ...]


def _uid(pod: JSON) -> str:
    return str(pod["metadata"]["uid"])


def build_scenario(
    cgroups: CgroupTreeBuilder, create: Callable[[JSON], JSON], uid: Callable[[int], str]
) -> Scenario:
    """Create the pods (``create`` may assign UIDs, as an API server does) and their cgroups."""
    relative = cgroups.relative
    postgres_spec = ContainerFixture("postgres", container_id(1), GUARANTEED, GUARANTEED)
    db = create(pod_object("db", uid(1), postgres_spec))
    postgres = cgroups.add_container(_uid(db), "guaranteed", container_id(1), swap_max="0")

    web = create(
        pod_object(
            "web",
            uid(2),
            ContainerFixture("migrate", container_id(2), {"memory": "64Mi"}, kind="initContainers"),
            ContainerFixture("app", container_id(3), {"memory": "1Gi"}, {"memory": "2Gi"}),
            ContainerFixture("sidecar", container_id(4), {"memory": "512Mi"}),
            ContainerFixture("evil", container_id(7), {"memory": "1Gi"}, {"memory": "2Gi"}),
            ContainerFixture("linked", container_id(8), {"memory": "1Gi"}, {"memory": "2Gi"}),
        )
    )
    app = cgroups.add_container(_uid(web), "burstable", container_id(3), swap_max="max")
    sidecar = cgroups.add_container(
        _uid(web), "burstable", container_id(4), swap_max="134217728", swap_current=8192
    )
    sandbox = cgroups.add_container(_uid(web), "burstable", container_id(50), swap_max="max")
    system = cgroups.mount / "system.slice"
    pod_dir = cgroups.pod_dir(_uid(web), "burstable")
    (pod_dir / cgroups.container_name(container_id(7))).symlink_to(system / "kubelet.service")
    linked = cgroups.add_container(_uid(web), "burstable", container_id(8))
    (linked / "memory.swap.max").unlink()
    (linked / "memory.swap.max").symlink_to(system / "memory.swap.max")

    batch = create(pod_object("batch", uid(3), ContainerFixture("job", container_id(5))))
    job = cgroups.add_container(_uid(batch), "besteffort", container_id(5), swap_max="4096")

    crafted = pod_object(
        "crafted",
        uid(4),
        ContainerFixture("x", None, {"memory": "1Gi"}, {"memory": "2Gi"}),
        annotations={"kubernetes.io/config.mirror": EVIL},
    )
    crafted["status"]["containerStatuses"][0]["containerID"] = f"containerd://{EVIL}"
    create(crafted)

    hijack = create(
        pod_object(
            "hijack",
            uid(5),
            ContainerFixture("victim", container_id(6), {"memory": "1Gi"}, {"memory": "2Gi"}),
        )
    )
    # The pod's cgroup is a symlink into system.slice, where a scope named like its container
    # waits: following the link would write system.slice's file.
    (cgroups.qos_dir("burstable") / cgroups.pod_dir_name(_uid(hijack), "burstable")).symlink_to(
        system
    )
    scope = system / cgroups.container_name(container_id(6))
    scope.mkdir()
    (scope / "memory.swap.max").write_text("max\n")

    return Scenario(
        pods=[db, web, batch, crafted, hijack],
        drifted={
            relative(app / "memory.swap.max"): "268435456",
            relative(job / "memory.swap.max"): "0",
        },
        in_sync=(relative(postgres), relative(sidecar)),
        unmapped=(relative(sandbox),),
    )
