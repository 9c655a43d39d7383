"""Give up after a timeout: nothing is retried, nothing is looked up, nothing is recorded."""

from __future__ import annotations

from harness.policy import Command, Situation, Stop


class StopOnTimeout:
    name = "stop_on_timeout"
    revision = "1"

    def decide(self, situation: Situation) -> Command:
        return Stop(reason="timed out; giving up")


POLICY = StopOnTimeout()
