"""The log lines of topics: one line per episode, never one per message.

Live fan-out loses messages on purpose (at most once): a subscriber that reads too slowly, a
database that cannot take what this process publishes, a listening connection that broke.
Each of these can happen thousands of times a second, so a line per lost message would bury
the log (and cost more than the message). An episode is logged once instead:

- `Drops`: messages lost in a row, counted while it lasts; ONE warn line when it ends (the
  reader caught up, the queue drained, the service stopped), naming where and how many.
- `Outage`: cross-process delivery down; ONE warn line when it goes down (with the reason),
  ONE info line when it is back, however many reconnection attempts lie between.

Lines go where the program's other lines go: the server's log while it serves (with its
format), else stderr at once (`main`, `svcc test`), as svc.runtime.lib.python_calls does.
"""

from __future__ import annotations

from svc.runtime.observability import serverlog
from svc.runtime.services import current as current_services


def say(level: str, message: str) -> None:
    """One line at `level` ("warn", "info"), not about a request."""
    log = current_services().log
    if log is None:
        serverlog.write_line(message, level)
    else:
        serverlog.standalone(log, level, message)


class Drops:
    """Messages lost in a row at one place (`what` says where, for the line)."""

    __slots__ = ("what", "count", "total")

    def __init__(self, what: str) -> None:
        self.what = what
        self.count = 0  # in the episode going on, 0 when none is
        self.total = 0  # ever (the counters of the metrics)

    def add(self, n: int = 1) -> None:
        self.count += n
        self.total += n

    def end(self) -> None:
        """The episode is over (if there was one): its line."""
        if self.count:
            count, self.count = self.count, 0
            dropped(self.what, count)


def dropped(what: str, count: int) -> None:
    """The line that ends an episode of `count` messages lost at `what`."""
    say("warn", f"topics: {what}: {count} message{'s' if count != 1 else ''} dropped")


class Outage:
    """Whether delivery to other processes works; a line when that changes."""

    __slots__ = ("what", "down_since", "reason")

    def __init__(self, what: str) -> None:
        self.what = what
        self.down_since: float | None = None
        self.reason = ""

    @property
    def is_down(self) -> bool:
        return self.down_since is not None

    def down(self, reason: str, now: float) -> None:
        """Delivery stopped (again): a warn line the first time only."""
        if self.down_since is not None:
            return
        self.down_since, self.reason = now, reason
        say("warn", f"topics: live delivery {self.what} stopped ({reason}); messages "
                    "published meanwhile are lost; retrying by itself")

    def up(self, now: float) -> None:
        """Delivery works: an info line if it had stopped."""
        if self.down_since is None:
            return
        seconds, self.down_since = now - self.down_since, None
        say("info", f"topics: live delivery {self.what} resumed after {seconds:.1f} s")
