"""All node facts in one snapshot, for ``doctor``, metrics and the capabilities."""

from __future__ import annotations

from dataclasses import dataclass

from agent.node.cgroups import CgroupFacts, read_cgroups
from agent.node.filesystems import FsMagic, statfs_magic
from agent.node.kernel import KernelFacts, read_kernel
from agent.node.memory import MemoryFacts, read_memory
from agent.node.paths import HostPaths
from agent.node.tmpfs import NoswapSupport, noswap_support


@dataclass(frozen=True)
class NodeFacts:
    memory: MemoryFacts
    cgroups: CgroupFacts
    kernel: KernelFacts
    tmpfs_noswap: NoswapSupport


def collect_node_facts(paths: HostPaths, *, fs_magic: FsMagic = statfs_magic) -> NodeFacts:
    kernel = read_kernel(paths)
    return NodeFacts(
        memory=read_memory(paths),
        cgroups=read_cgroups(paths, fs_magic),
        kernel=kernel,
        tmpfs_noswap=noswap_support(kernel.version, kernel.in_user_namespace),
    )
