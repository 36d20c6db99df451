"""The invariants, judged from one scenario's observations (pure: data in, findings out).

Times are ``time.monotonic()`` readings from the soak's observers, the fake API server's
request log and the agent's own state file (one clock for every process). Where an
observer can only see an event after the agent acted on it, the rule is written so that
the delay makes it more lenient, never stricter; the stated slacks are the only allowances.

- ``lock-released``: no lock of ours is listed more than ``BUDGET_SLACK`` after the budget's
  end, counted from the start of the record the agent runs (else from the signal), until
  the shutdown is called off (PrepareForShutdown(false), or logind restarted and forgot it).
- ``one-lock``: logind never lists two ``kubelet-companion`` delay locks at once.
- ``phase-order``: a pod deletion (or eviction) of phase *i* before phase *j < i*'s deadline
  only when every pod phase *j* had when the shutdown began is already gone (or it had none).
  So phases start in priority order, and none starts early unless the one before is done.
  Every pod created before the shutdown began counts, even one created while the agent's
  watches were broken: the agent must find it (it lists the node's pods when its pod watch
  is down) rather than start the next phase with it still running.
- ``foreign-keys``: every committed version of the Node carries exactly the taints, labels
  and annotations outside ``kubelet-companion.io/`` that the foreign writer's own record says.
- ``cancel-undone``: after a called-off shutdown, logind lists a lock of ours within
  ``CANCEL_SECONDS``, and the shutting-down taint is gone within ``CANCEL_SECONDS``, counted
  from when nothing blocked it (logind back on the bus, a restarted agent given
  ``AGENT_START_SECONDS``, the API server answering again for the taint; after an API fault
  the taint's retry backoff, capped at ``TAINT_BACKOFF_SECONDS``, is allowed on top).
- ``state-file``: every read of the state file parses as a shutdown record.
- ``readiness-gate``: the gate taint is lifted only after the critical pod is Ready, and in
  bootstrap mode it is never put back.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.soak.scenario import Interval, Observations

INVARIANTS = (
    "lock-released",
    "one-lock",
    "phase-order",
    "foreign-keys",
    "cancel-undone",
    "state-file",
    "readiness-gate",
)
BUDGET_SLACK = 0.5
"""Seconds past the budget's end a lock may still be listed (logind's HUP handling, load)."""
SIGNAL_SKEW = 0.25
"""A signal may reach the observer this much after the agent has acted on it."""
CANCEL_SECONDS = 1.0
AGENT_START_SECONDS = 3.0
TAINT_BACKOFF_SECONDS = 6.0
"""The taint keeper's retry backoff cap (5 s) plus its 20% jitter."""
TOLERANCE = 0.02


@dataclass(frozen=True)
class Violation:
    invariant: str
    detail: str


@dataclass(frozen=True)
class Episode:
    start: float
    end: float
    ended_by: str
    """``cancel`` (PrepareForShutdown(false)), ``logind-restart``, or ``end`` (still on)."""
    agent_start: float
    """The start of the record the agent runs: its own for this shutdown, else an older one
    it resumed, else (nothing recorded) the signal's."""


@dataclass
class Verdict:
    violations: list[Violation]
    checks: dict[str, int]


def episodes(obs: Observations) -> list[Episode]:
    found = []
    signals = sorted(obs.signals, key=lambda s: s[1])
    for value, start in signals:
        if not value:
            continue
        if found and found[-1].end > start:
            continue  # a repeated (true) while one is on
        ends = [(t, "cancel") for v, t in signals if not v and t > start]
        ends += [(i.start, "logind-restart") for i in obs.logind_down if i.start > start]
        end, ended_by = min(ends, default=(obs.ended, "end"))
        # The deadlines are those of the record the agent runs: one it began for this
        # shutdown, or an older one it resumed (a restarted agent that missed a cancellation
        # cannot tell a new PowerOff from the old one, and resumes the old record).
        starts = [mono for _, mono, _ in obs.records if mono is not None and mono <= end]
        own = [mono for mono in starts if mono >= start - 0.5]
        agent_start = min(own) if own else max(starts, default=start)
        found.append(Episode(start, end, ended_by, agent_start))
    return found


def judge(obs: Observations) -> Verdict:
    verdict = Verdict([], dict.fromkeys(INVARIANTS, 0))
    found = episodes(obs)
    _lock_released(obs, found, verdict)
    _one_lock(obs, verdict)
    _phase_order(obs, found, verdict)
    _cancel_undone(obs, found, verdict)
    verdict.checks["foreign-keys"] += obs.foreign_writes
    verdict.checks["state-file"] += obs.state_reads
    verdict.checks["readiness-gate"] += 1 if obs.lifted_at is not None else 0
    for invariant, _, detail in obs.node_findings:
        verdict.violations.append(Violation(invariant, detail))
    verdict.violations += [Violation("state-file", torn) for torn in obs.torn_reads]
    return verdict


def _lock_released(obs: Observations, found: list[Episode], verdict: Verdict) -> None:
    budget = obs.scenario.budget
    for episode in found:
        verdict.checks["lock-released"] += 1
        limit = episode.agent_start + budget + BUDGET_SLACK
        late = [
            sent
            for sent, pids in obs.lock_samples
            if pids and limit < sent < episode.end - SIGNAL_SKEW
        ]
        if late:
            verdict.violations.append(
                Violation(
                    "lock-released",
                    f"lock listed {late[-1] - (limit - BUDGET_SLACK):.2f} s after the "
                    f"{budget} s budget's end (shutdown at +{episode.start - obs.armed:.2f} s)",
                )
            )


def _one_lock(obs: Observations, verdict: Verdict) -> None:
    verdict.checks["one-lock"] += len(obs.lock_samples)
    doubled = [(sent, pids) for sent, pids in obs.lock_samples if len(pids) > 1]
    if doubled:
        sent, pids = doubled[0]
        verdict.violations.append(
            Violation(
                "one-lock",
                f"{len(pids)} locks of ours listed at +{sent - obs.armed:.2f} s (pids {pids}); "
                f"{len(doubled)} such samples",
            )
        )


def bucket_of(priority: int, buckets: tuple[tuple[int, int], ...]) -> int:
    index = 0
    for i, (floor, _) in enumerate(buckets):
        if priority >= floor:
            index = i
    return index


def _phase_order(obs: Observations, found: list[Episode], verdict: Verdict) -> None:
    scenario = obs.scenario
    buckets = scenario.buckets
    phase_of = {p.name: bucket_of(p.priority, buckets) for p in scenario.pods}
    for episode in found:
        deadlines = []
        total = 0.0
        for _, seconds in buckets:
            total += seconds
            deadlines.append(episode.agent_start + total)
        initial: dict[int, list[str]] = {}
        for name, phase in phase_of.items():
            created = obs.created.get(name)
            removed = obs.removed.get(name)
            if created is None or created > episode.start:
                continue
            if removed is not None and removed <= episode.start:
                continue
            initial.setdefault(phase, []).append(name)
        for when, name in obs.deletions:
            if name not in phase_of or not episode.start <= when <= episode.end:
                continue
            verdict.checks["phase-order"] += 1
            phase = phase_of[name]
            for earlier in range(phase):
                if when >= deadlines[earlier] - TOLERANCE:
                    continue
                pending = [
                    pod
                    for pod in initial.get(earlier, [])
                    if obs.removed.get(pod) is None or obs.removed[pod] > when + TOLERANCE
                ]
                if pending:
                    verdict.violations.append(
                        Violation(
                            "phase-order",
                            f"{name} (phase {phase}) deleted at "
                            f"+{when - episode.agent_start:.2f} s "
                            f"of the shutdown, before phase {earlier}'s deadline "
                            f"(+{deadlines[earlier] - episode.agent_start:.0f} s) while "
                            f"{', '.join(pending)} still there",
                        )
                    )
                    return


def _overlaps(interval: Interval, start: float, end: float) -> bool:
    return interval.start < end and interval.end > start


def _cancel_undone(obs: Observations, found: list[Episode], verdict: Verdict) -> None:
    for number, episode in enumerate(found):
        if episode.ended_by == "end":
            continue
        # A new PowerOff puts the taint back and uses the lock: judge only the time before it.
        next_start = found[number + 1].start if number + 1 < len(found) else float("inf")
        end = episode.end
        lock_ref = end
        taint_ref, taint_allowance = end, CANCEL_SECONDS
        for _ in range(10):  # blockers can chain; a few rounds reach the fixed point
            before = (lock_ref, taint_ref, taint_allowance)
            for interval in obs.logind_down:  # the agent learns of the end from logind
                if _overlaps(interval, end - 1e-6, lock_ref + CANCEL_SECONDS):
                    lock_ref = max(lock_ref, interval.end)
                if _overlaps(interval, end - 1e-6, taint_ref + taint_allowance):
                    taint_ref = max(taint_ref, interval.end)
            for down in obs.agent_down:  # down until started again, then starting up
                starting = Interval(down.kind, down.start, down.end + AGENT_START_SECONDS)
                if _overlaps(starting, end - 1e-6, lock_ref + CANCEL_SECONDS):
                    lock_ref = max(lock_ref, starting.end)
                if _overlaps(starting, end - 1e-6, taint_ref + taint_allowance):
                    taint_ref = max(taint_ref, starting.end)
            for interval in obs.api_faults:
                if _overlaps(interval, end - 1e-6, taint_ref + taint_allowance):
                    taint_ref = max(taint_ref, interval.end)
                    taint_allowance = CANCEL_SECONDS + TAINT_BACKOFF_SECONDS
            if (lock_ref, taint_ref, taint_allowance) == before:
                break
        judged = _check_lock_back(obs, episode, lock_ref, next_start, verdict)
        judged += _check_taint_gone(obs, episode, taint_ref + taint_allowance, next_start, verdict)
        verdict.checks["cancel-undone"] += judged


def _check_lock_back(
    obs: Observations, episode: Episode, ref: float, next_start: float, verdict: Verdict
) -> int:
    """Judge the lock after a called-off shutdown; 0 when it cannot be judged (the scenario
    ended, or the next shutdown began, before the time was up)."""
    after = [s for s in obs.lock_samples if s[0] >= ref + CANCEL_SECONDS]
    until = min(after[0][0] if after else float("inf"), next_start)
    if any(len(pids) == 1 for sent, pids in obs.lock_samples if episode.end <= sent <= until):
        return 1
    if not after or next_start < after[0][0]:
        return 0
    verdict.violations.append(
        Violation(
            "cancel-undone",
            f"no lock of ours {until - episode.end:.2f} s after the shutdown was called off "
            f"({episode.ended_by} at +{episode.end - obs.armed:.2f} s)",
        )
    )
    return 1


def _check_taint_gone(
    obs: Observations, episode: Episode, limit: float, next_start: float, verdict: Verdict
) -> int:
    """Judge the taint after a called-off shutdown; 0 when it cannot be judged (the scenario
    ended, or the next shutdown began, before the time was up)."""
    present = False
    for when, value in obs.shutdown_taint:
        if when <= episode.end:
            present = value
        elif when <= min(limit, next_start) and not value:
            return 1
    if not present:
        return 1
    if obs.ended < limit or next_start < limit:
        return 0
    verdict.violations.append(
        Violation(
            "cancel-undone",
            f"shutting-down taint still on the Node {limit - episode.end:.2f} s after the "
            f"shutdown was called off ({episode.ended_by} at +{episode.end - obs.armed:.2f} s)",
        )
    )
    return 1
