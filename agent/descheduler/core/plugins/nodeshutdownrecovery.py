"""NodeShutdownRecovery (Deschedule, ours, opt-in): the non-graceful node shutdown procedure,
done only where our own agent saw the shutdown through.

Kubernetes leaves the pods of a node that went down without kubelet noticing (a shutdown the
kubelet's graceful shutdown did not catch, or one it caught but the node never came back)
bound to it: StatefulSet pods are not recreated elsewhere and their volumes stay attached,
until someone adds ``node.kubernetes.io/out-of-service=nodeshutdown:NoExecute``. Adding it
is only safe when the node is really off: on a node that is merely cut off, the pods still
run and write to their volumes while copies start elsewhere.

When: the node's Ready condition has not been True for at least ``notReadySeconds``, and our
evidence that it is off holds, all of it from a report the descheduler believes (owned by this
Node's current uid, well-formed, plausible: ``agent.descheduler.cache.usage``):

- its agent's NodeReport last said the shutdown ``completed``;
- in the boot the Node still reports (``status.nodeInfo.bootID``): kubelet reports a new
  bootID as soon as the node comes up again, so a node that booted since is never taken for
  one that is still down;
- and the report was the node's last word, which the descheduler witnessed: it saw the
  report change (a watch event, not a report it found when it started: when that one last
  changed, only its writer says), no later than the node went NotReady
  (``CLOCK_SKEW_SECONDS`` allowed between the descheduler's clock and the condition's), and
  no earlier than its staleness window before that. A report that changed
  *after* the node went NotReady was written by someone who could still reach the API server
  while the node's kubelet could not (another node, or an agent on a node that is not off);
  one already stale when the node went NotReady says nothing about that moment. So this
  plugin acts only in a descheduler that was running (any replica: followers watch too) when
  the node went down; a one-shot run, or the offline plan, never adds the taint.

A node with no believed report, a report that never said ``completed``, a report from
another boot, a report that is not the node's last word, or no known time of becoming
NotReady is left alone. Act: add the taint (the runtime records it as ours on the
descheduler's Lease first, then marks it with our annotation on the node:
``live.recordedtaints``); the reason (and so the Event on the Node) names the evidence.
Undo: once the node is Ready again, remove the taint, only if the descheduler's own record
(``snapshot.taint_record``) says we added it, and the runtime removes it only where the
node's annotation names it too. Our annotation alone proves nothing (any node may write its
own Node's annotations): a node carrying it without a record entry is judged as if it were
not there, so an operator's own out-of-service taint is never touched, and a forged mark
never keeps the taint off a node that is really down. Offline, where a snapshot carries no
record, no out-of-service taint is taken for ours.

Every node is looked at, not only the cycle's (those are Ready by definition), and the plugin
runs even when the cycle is skipped for having fewer than two Ready nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.config.schema import setting
from agent.descheduler.core.framework.types import Handle
from agent.descheduler.model.cluster import CLOCK_SKEW_SECONDS, NodeInfo, NodeUsage
from agent.descheduler.plan.shape import TaintChange
from agent.kubesemantics.nodekeys import OUT_OF_SERVICE_ANNOTATION
from agent.kubesemantics.taintownership import out_of_service_taint

NAME = "NodeShutdownRecovery"


@dataclass(frozen=True)
class NodeShutdownRecoveryArgs:
    not_ready_seconds: float = setting(300.0, minimum=0)
    """How long the node must have been NotReady after our agent saw its shutdown complete."""


def shutdown_evidence(node: NodeInfo, usage: NodeUsage | None) -> str | None:  # noqa: PLR0911 - one exit per missing piece of evidence
    """Why the node does not count as shut down by our agent's word, or ``None`` when it does."""
    if usage is None:
        return "no NodeReport the descheduler believes"
    if not usage.shutdown_completed:
        return "its NodeReport does not say the shutdown completed"
    if not usage.boot_id or usage.boot_id != node.boot_id:
        return "the node has booted since its NodeReport was written"
    if not usage.change_witnessed:
        return "the descheduler did not see its NodeReport's last change happen"
    went_down = node.ready_transition
    if went_down is None:
        return "no known time of becoming NotReady"
    if usage.changed_at > went_down + CLOCK_SKEW_SECONDS:
        return "its NodeReport changed after the node went NotReady"
    if went_down - usage.changed_at > usage.stale_after:
        return "its NodeReport was already stale when the node went NotReady"
    return None


def evidence(node: NodeInfo, usage: NodeUsage) -> str:
    """The evidence ``shutdown_evidence`` accepted, in words (the Event says it)."""
    lead = (node.ready_transition or 0.0) - usage.changed_at
    return (
        f"its agent's NodeReport (owned by Node uid {node.uid}) said the shutdown completed "
        f"in boot {usage.boot_id}, which the Node still reports, and last changed "
        f"{lead:.0f}s before the node went NotReady"
    )


def wants_taint(
    node: NodeInfo, usage: NodeUsage | None, now: float, not_ready_seconds: float
) -> bool:
    """The out-of-service taint belongs on this NotReady node now."""
    if node.ready or node.ready_transition is None:
        return False
    if now - node.ready_transition < not_ready_seconds:
        return False
    return shutdown_evidence(node, usage) is None


class NodeShutdownRecovery:
    name = NAME
    runs_without_ready_nodes = True
    """Runs even when the cycle is skipped for too few Ready nodes: a two-node cluster with
    one node down is where moving its StatefulSet pods matters most."""

    def __init__(self, args: NodeShutdownRecoveryArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle

    def deschedule(self, nodes: Sequence[NodeInfo]) -> None:  # noqa: ARG002 - every node counts
        snapshot = self.handle.snapshot
        owned = out_of_service_taint()
        for node in sorted(snapshot.nodes.values(), key=lambda n: n.name):
            ours = snapshot.taint_record.get(OUT_OF_SERVICE_ANNOTATION, node.name) is not None
            foreign = not ours and any(
                t.get("key") == owned.key and t.get("effect") == owned.effect for t in node.taints
            )
            if node.ready and ours:
                add, reason = False, "node is Ready again"
            elif (
                not ours
                and not foreign
                and wants_taint(
                    node,
                    snapshot.node_usage.get(node.name),
                    snapshot.now,
                    self.args.not_ready_seconds,
                )
            ):
                add = True
                usage = snapshot.node_usage[node.name]  # wants_taint held: it is there
                reason = (
                    f"NotReady for {snapshot.now - (node.ready_transition or 0):.0f}s; "
                    f"evidence: {evidence(node, usage)}"
                )
            else:
                continue
            self.handle.record_taint(
                TaintChange.of(
                    owned,
                    node.name,
                    add=add,
                    plugin=NAME,
                    profile=self.handle.profile,
                    reason=reason,
                )
            )
