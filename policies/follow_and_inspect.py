"""Follow the existing job; on an unknown outcome, inspect the target (seed 000's device connector).

A reply that says "running" means the wait ended, not that the request failed: follow the job it names
(``task wait``) instead of starting another. A job whose connector started it and never completed it has an
unknown outcome: stop retrying it and inspect the target. If the effect is there, record it; if the target
shows it absent, that job died with its connector and will never apply, so a new operation (a new key) may
follow; if the connector holds no record of the key at all, the same key may be sent again, under the same
rule as any retry: once no earlier request can still arrive (a request still in transit has left no record
yet). Anything else is reconciled as ``reconcile_and_reauthorize`` does: verified receipts recorded, no
dispatch without a valid revision, approval and claim, uncertainty waited out and escalated before the deadline.

Revision 2 (from what ``harness explore`` found): the connector's "no record" no longer makes a same-key
retry safe by itself. Revision 3: as ``reconcile_and_reauthorize`` revision 5, no retry on an absence read before
the target's reads caught up with the last attempt. Revision 4: as its revision 6, they catch up with an attempt
only after it may last have reached the target, not after it was sent. Revision 5: as its revision 7, the last
command the budget allows escalates, unless it records the action. Revision 6: as its revision 8, so does, within
the escalation margin before the deadline, a retry or a read no wait came right before. Revision 7: as its
revision 9, a same-key retry must also arrive inside the window of an earlier request that landed just after the
read. Revision 8: as its revision 10, a same-key retry's claim is leased to the deadline less the margin too (a new
key's operation has no claim to lease). Revision 9: as its revision 11, a bridge's connection error bounds nothing
of when the call reaches the tool server. Revision 10: as its revision 12, only a read sent since a do-not-replay
error (or an unknown outcome) reached the worker settles it. Revision 11: as its revision 13, a job follow, a read or
a retry leaves time for its whole round trip as the worker waits for it (a follow waits at the connector too), and a
new key's operation after a dead job is leased to the deadline less that, as a same-key retry is. Revision 12 (from
what an exploration found that also tried a read's answer 1 s slow, back in time): the latest job is the one a follow
sent since the last attempt left reports on, not any follow answered since: another worker's new operation can leave
while this worker's follow of the dead job is on its way back, and that answer says nothing of the new one.
"""

from __future__ import annotations

from harness.policy import Command, FollowJob, LookupView, RetryNewKey, RetrySameAction, Situation
from policies.reconcile_and_reauthorize import ReconcileAndReauthorize

#: Any job follow: how long one may take to come back is the same for every follow (``margin_s``).
A_FOLLOW = FollowJob()


class FollowAndInspect(ReconcileAndReauthorize):
    name = "follow_and_inspect"
    revision = "12"

    def next_command(self, situation: Situation) -> Command:
        if situation.contract.via != "connector" or situation.recorded or situation.escalated:
            return super().next_command(situation)
        if situation.observed_receipts():
            return super().next_command(situation)
        job = self._latest_job(situation)
        last = situation.attempts[-1] if situation.attempts else None
        unanswered = last is not None and last.observation != "response"
        named_running = last is not None and last.response_status == "running"
        if job is None and (unanswered or named_running):
            return FollowJob()
        if job is not None and job.effect == "running" and situation.time_left_s > self.margin_s(situation, A_FOLLOW):
            return FollowJob()
        return super().next_command(situation)

    def _latest_job(self, situation: Situation) -> LookupView | None:
        """The last follow sent since the last attempt was sent: one sent before it (answered after, its answer
        slow, or the attempt another worker's) reports on an earlier job."""
        since = situation.last_sent_bound_s or 0.0
        follows = [
            lk
            for lk in situation.lookups
            if lk.source == "follow_job" and (lk.at_s if lk.sent_at_s is None else lk.sent_at_s) >= since
        ]
        return follows[-1] if follows else None

    def _dead(self, situation: Situation) -> bool:
        """Whether the connector reported the latest attempt's job started and never completed."""
        last = situation.attempts[-1] if situation.attempts else None
        job = self._latest_job(situation)
        return (last is not None and last.response_status == "unknown_outcome") or (
            job is not None and job.effect == "unknown_outcome"
        )

    def retry_command(self, situation: Situation) -> Command:
        """Absent at the target: a job the connector started and lost is dead, so only a new operation can
        follow it; a key the connector never recorded can simply be sent again."""
        return RetryNewKey(claim=True) if self._dead(situation) else RetrySameAction(claim=True)

    def retry_is_safe(self, situation: Situation, looked_at_s: float) -> bool:
        """A dead job is followed only by a new operation, safe once the target, as it stood after the connector
        reported the job dead (allowing for a lagging lookup), shows the effect absent. Otherwise, as for any
        retry: "no record" at the connector says nothing of a request still on its way there."""
        lag = situation.contract.lookup_lag_s
        if self._dead(situation):
            return looked_at_s - lag >= self._died_by(situation)
        return super().retry_is_safe(situation, looked_at_s)

    def _died_by(self, situation: Situation) -> float:
        """When the connector had reported the latest job dead (the job had died by then)."""
        job = self._latest_job(situation)
        if job is not None and job.effect == "unknown_outcome":
            return job.at_s
        last = situation.attempts[-1]
        return last.replied_at_s if last.replied_at_s is not None else situation.now_s


POLICY = FollowAndInspect()
