"""How often the background runners look at the database, and how long a lease outlives a run.

One value, handed to `start_background` and from there to the job runner, the schedule runner
and the claim statements, so that a test (or svc.toml) can shorten them: with the default lease
grace a crashed job waits five seconds past its deadline before another runner takes it back.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BackgroundTimings:
    """`poll_seconds`: how often an idle job runner looks for due jobs made elsewhere (another
    process, a retry whose time came); a job enqueued in its own process wakes it at once.
    `lease_grace_seconds`: how long a claim (of a job or a scheduled run) outlives the run's
    deadline before another runner may take it over. A live runner cancels its run at the
    deadline, so the grace only has to cover a busy event loop and a clock running apart."""

    poll_seconds: float = 0.2
    lease_grace_seconds: float = 5.0

    @property
    def lease_grace_ms(self) -> int:
        """The grace as the tables count time (milliseconds)."""
        return round(self.lease_grace_seconds * 1000)


#: Today's values, what every runner uses unless told otherwise.
DEFAULT_TIMINGS = BackgroundTimings()
