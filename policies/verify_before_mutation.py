"""Verify the original expectation before any further mutation (seed 002's bridge).

A connection error says only that the caller did not receive a complete reply: the call may or may not have
run. Before anything is sent again, the run is read through the bridge and compared with the original
expectation (``verify_outcome``), never by sending the input again: a confirmed result is recorded, another
timeout keeps the block (wait, verify again, escalate before the deadline), a result for other arguments is
never accepted as a weaker success, and a user's stop stays a stop (nothing more is sent). Only a verified
absence may be followed by sending the same call again, under the same request UUID, after a claim. Revision 2:
as ``reconcile_and_reauthorize`` revision 5, no retry on an absence read before the target's reads caught up with
the last attempt. Revision 3: as its revision 6, they catch up with a call only after it reached the tool server
(when its error came back), not after it was sent. Revision 4: as its revision 7, the last command the budget
allows escalates, unless it records the action. Revision 5: as its revision 8, so does, within the escalation
margin before the deadline, a retry or a read no wait came right before. Revision 6: as its revision 9, a same-key
retry must also arrive inside the window of an earlier call that reached the tool server just after the read.
Revision 7: as its revision 10, a same-key retry's claim is leased to the deadline less the margin too. Revision
8: as its revision 11, the bridge's connection error bounds nothing of when the call reaches the tool server: it
can come back while the call is still on its way (seed 002: the error says only that no reply came). Revision 9:
as its revision 12, only a verification sent since a do-not-replay error reached the worker settles it (one sent
before, answered after, was taken to). Revision 10: as its revision 13, a verification or a retry leaves time for
its whole round trip as the worker waits for it.
"""

from __future__ import annotations

from harness.policy import Command, VerifyOutcome
from policies.reconcile_and_reauthorize import ReconcileAndReauthorize


class VerifyBeforeMutation(ReconcileAndReauthorize):
    name = "verify_before_mutation"
    revision = "10"
    read_command: Command = VerifyOutcome()
    read_source = "verify"


POLICY = VerifyBeforeMutation()
