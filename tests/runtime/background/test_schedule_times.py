"""When a scheduled function is next due (svc.runtime.background.schedules.next_run_ms): one period later
for @every; the cron expression's next match, in UTC, for @cron."""

from __future__ import annotations

from datetime import datetime, timezone

from svc.rules.contract import Schedule
from svc.runtime.background.schedules import next_run_ms, spec_of


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp() * 1000)


def test_every_is_one_period_after():
    every = Schedule("tick", print, every_ms=300_000)
    assert next_run_ms(every, ms("2026-11-25T10:00:01")) == ms("2026-11-25T10:05:01")
    assert spec_of(every) == "every 300000ms"


def test_cron_is_the_next_match_in_utc():
    nightly = Schedule("nightly", print, cron="0 3 * * *")
    assert next_run_ms(nightly, ms("2026-11-25T02:59:59")) == ms("2026-11-25T03:00:00")
    assert next_run_ms(nightly, ms("2026-11-25T03:00:00")) == ms("2026-11-26T03:00:00")
    weekdays = Schedule("report", print, cron="30 8 * * 1-5")
    # 2026-11-28 is a Saturday: the next run is Monday the 30th.
    assert next_run_ms(weekdays, ms("2026-11-27T09:00:00")) == ms("2026-11-30T08:30:00")
    assert spec_of(weekdays) == "cron 30 8 * * 1-5"
