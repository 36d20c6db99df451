"""kubepods cgroup names for both drivers, and the writer's path shape check."""

import pytest

from agent.node.cgroupfiles import CgroupPathError
from agent.node.containercgroups import parse_swap_max
from agent.node.kubepods import CgroupDriver, KubepodsLayout, PodQOSDir

UID = "0a1b2c3d-0000-4000-8000-00000000abcd"
CID = "c" * 64
SYSTEMD = KubepodsLayout(CgroupDriver.SYSTEMD)
CGROUPFS = KubepodsLayout(CgroupDriver.CGROUPFS)


@pytest.mark.parametrize(
    ("layout", "root"),
    [
        (SYSTEMD, ("kubepods.slice",)),
        (CGROUPFS, ("kubepods",)),
        (
            KubepodsLayout(CgroupDriver.SYSTEMD, "/kubelet"),
            ("kubelet.slice", "kubelet-kubepods.slice"),
        ),
        (
            KubepodsLayout(CgroupDriver.SYSTEMD, "/kubelet.slice"),
            ("kubelet.slice", "kubelet-kubepods.slice"),
        ),
        (KubepodsLayout(CgroupDriver.CGROUPFS, "/kubelet"), ("kubelet", "kubepods")),
    ],
)
def test_kubepods_root_follows_driver_and_cgroup_root(
    layout: KubepodsLayout, root: tuple[str, ...]
) -> None:
    """kubelet's cgroupRoot nests kubepods; systemd spells each level as a slice."""
    assert layout.root == root


@pytest.mark.parametrize(
    ("layout", "name", "qos", "uid"),
    [
        (SYSTEMD, f"kubepods-pod{UID.replace('-', '_')}.slice", PodQOSDir.GUARANTEED, UID),
        (SYSTEMD, f"kubepods-burstable-pod{UID.replace('-', '_')}.slice", PodQOSDir.BURSTABLE, UID),
        (SYSTEMD, f"kubepods-besteffort-pod{'f' * 32}.slice", PodQOSDir.BEST_EFFORT, "f" * 32),
        (SYSTEMD, f"kubepods-besteffort-pod{UID}.slice", PodQOSDir.BURSTABLE, None),
        (SYSTEMD, "kubepods-burstable.slice", PodQOSDir.GUARANTEED, None),
        (CGROUPFS, f"pod{UID}", PodQOSDir.BURSTABLE, UID),
        (CGROUPFS, "pod..", PodQOSDir.BURSTABLE, None),
        (CGROUPFS, "burstable", PodQOSDir.GUARANTEED, None),
    ],
)
def test_pod_uid_from_directory_names(
    layout: KubepodsLayout, name: str, qos: PodQOSDir, uid: str | None
) -> None:
    """Pod directories carry the UID (systemd escapes - as _); other names are not pods."""
    assert layout.pod_uid(name, qos) == uid


@pytest.mark.parametrize(
    ("layout", "name", "parsed"),
    [
        (SYSTEMD, f"cri-containerd-{CID}.scope", ("cri-containerd", CID)),
        (SYSTEMD, f"crio-{CID}.scope", ("crio", CID)),
        (SYSTEMD, f"docker-{CID}.scope", ("docker", CID)),
        (SYSTEMD, f"crio-conmon-{CID}.scope", None),
        (SYSTEMD, CID, None),
        (CGROUPFS, CID, ("", CID)),
        (CGROUPFS, f"crio-{CID}", ("crio", CID)),
        (CGROUPFS, "..", None),
        (CGROUPFS, "memory.swap.max", None),
    ],
)
def test_container_cgroup_names(
    layout: KubepodsLayout, name: str, parsed: tuple[str, str] | None
) -> None:
    """Runtime scopes (and cgroupfs IDs) are containers; conmon and junk are not."""
    assert layout.container(name) == parsed


def test_accepted_container_paths() -> None:
    """Guaranteed pods sit directly under kubepods, the others under their QoS cgroup."""
    sd_uid = UID.replace("-", "_")
    SYSTEMD.check_container_path(
        ["kubepods.slice", f"kubepods-pod{sd_uid}.slice", f"cri-containerd-{CID}.scope"]
    )
    SYSTEMD.check_container_path(
        [
            "kubepods.slice",
            "kubepods-besteffort.slice",
            f"kubepods-besteffort-pod{sd_uid}.slice",
            f"crio-{CID}.scope",
        ]
    )
    CGROUPFS.check_container_path(["kubepods", "burstable", f"pod{UID}", CID])


@pytest.mark.parametrize(
    "components",
    [
        ["system.slice"],
        ["kubepods.slice", "..", "system.slice"],
        ["kubepods.slice", "kubepods-burstable.slice", f"kubepods-burstable-pod{UID}.slice"],
        ["kubepods.slice", "kubepods-burstable.slice", "../../system.slice", f"crio-{CID}.scope"],
        ["kubepods.slice", "kubepods-pod../../system.slice", f"crio-{CID}.scope"],
        [
            "kubepods.slice",
            "kubepods-burstable.slice",
            f"kubepods-besteffort-pod{UID}.slice",
            f"crio-{CID}.scope",
        ],
        ["kubepods.slice", f"kubepods-pod{UID}.slice", "system.slice"],
        ["kubepods.slice", f"kubepods-pod{UID}.slice", f"crio-{CID}.scope", "child"],
        [
            "kubepods.slice",
            "kubepods-guaranteed.slice",
            f"kubepods-pod{UID}.slice",
            f"crio-{CID}.scope",
        ],
    ],
)
def test_refused_paths(components: list[str]) -> None:
    """Anything not shaped like a container cgroup of the layout is refused."""
    with pytest.raises(CgroupPathError):
        SYSTEMD.check_container_path(components)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("max\n", "max"),
        ("268435456\n", 268435456),
        ("0", 0),
        ("", None),
        (None, None),
        ("-1", None),
        ("12k", None),
    ],
)
def test_parse_swap_max(text: str | None, value: object) -> None:
    """``max``, a byte count, or unknown."""
    assert parse_swap_max(text) == value
