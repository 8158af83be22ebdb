"""The rules of functions run outside requests: `@job`, `@every` and `@cron`
(docs/reference/language.md, "Jobs and schedules").

Runs on resolved declarations (FunctionInfo), before function bodies are checked, because
`enqueue(db, "name", payload)` in a body is checked against the job table built here. Each
error is reported at the attribute (its text, or the option at fault) or at the parameter.
"""

from __future__ import annotations

from typing import Callable, Iterable

from svc.compiler.diagnostics import Diagnostic
from svc.compiler.front import syntax
from svc.compiler.program import FunctionInfo, JobInfo, ScheduleInfo
from svc.compiler.source import Span
from svc.compiler.svctypes import DB, UNIT, UNKNOWN, ClassRef, ResultOf, Type, format_type
from svc.rules.contract import (
    JOB_ATTEMPTS, JOB_BACKOFF_MS, JOB_DEADLINE_MS, JOB_NAME, MAX_ATTEMPTS, MAX_DURATION_MS,
    MIN_PERIOD_MS, SCHEDULE_DEADLINE_MS, TriggerKind, duration_ms,
)

Report = Callable[[str, Span], None]
DURATION_TEXT = "a duration such as \"500ms\", \"30s\", \"5m\", \"1h\" or \"1d\""
_OPTIONS = {TriggerKind.JOB: ("attempts", "backoff", "deadline"),
            TriggerKind.EVERY: ("deadline",), TriggerKind.CRON: ("deadline",)}


def build_background(functions: Iterable[FunctionInfo],
                     diagnostics: list[Diagnostic]) -> tuple[dict[str, JobInfo], list[ScheduleInfo]]:
    """The program's jobs (by name) and schedules, in declaration order; every rule broken is
    appended to `diagnostics`."""
    def report(message: str, span: Span) -> None:
        diagnostics.append(Diagnostic(message, span))

    jobs: dict[str, JobInfo] = {}
    schedules: list[ScheduleInfo] = []
    for fn in functions:
        attrs = fn.decl.background
        if not attrs:
            continue
        if len(attrs) > 1 or fn.decl.routes:
            report(f"'{fn.name}' has more than one role: a function is a route handler, a job "
                   "or a schedule, with one attribute of those", attrs[-1].span)
            continue
        attr = attrs[0]  # above an `async def`: the parser refuses an attribute on a `def`
        options = _options(attr, report)
        _check_result(fn, attr, report)
        if attr.kind is TriggerKind.JOB:
            job = _job(fn, attr, options, report)
            earlier = jobs.get(job.name)
            if earlier is not None:
                report(f"job '{job.name}' is already defined by '{earlier.handler}' at "
                       f"{earlier.span.file}:{earlier.span.line}", attr.text_span)
                continue
            jobs[job.name] = job
        else:
            schedule = _schedule(fn, attr, options, report)
            if schedule is not None:
                schedules.append(schedule)
    return jobs, schedules


def _options(attr: syntax.BackgroundAttr, report: Report) -> dict[str, int]:
    """The attribute's options, durations in milliseconds; a bad one is reported and left out."""
    allowed = _OPTIONS[attr.kind]
    values: dict[str, int] = {}
    for option in attr.options:
        if option.name not in allowed:
            report(f"@{attr.kind.value} has no option '{option.name}' (it takes "
                   f"{', '.join(allowed)})", option.span)
        elif option.name in values:
            report(f"option '{option.name}' of @{attr.kind.value} is given twice", option.span)
        elif option.name == "attempts":
            if not isinstance(option.value, int) or not 1 <= option.value <= MAX_ATTEMPTS:
                report(f"attempts must be an integer from 1 to {MAX_ATTEMPTS}, found "
                       f"{option.value!r}", option.value_span)
            else:
                values["attempts"] = option.value
        else:
            ms = duration_ms(option.value) if isinstance(option.value, str) else None
            if ms is None or not 1 <= ms <= MAX_DURATION_MS:
                report(f"{option.name} must be {DURATION_TEXT}, at most 7 days, found "
                       f"{option.value!r}", option.value_span)
            else:
                values[option.name] = ms
    return values


def _check_result(fn: FunctionInfo, attr: syntax.BackgroundAttr, report: Report) -> None:
    if fn.returns not in (ResultOf(UNIT), UNKNOWN):
        where = fn.decl.returns.span if fn.decl.returns is not None else fn.decl.name_span
        report(f"@{attr.kind.value} function '{fn.name}' must return Result[unit, Error] (an "
               f"error is a failed run), found {format_type(fn.returns)}", where)


def _job(fn: FunctionInfo, attr: syntax.BackgroundAttr, options: dict[str, int],
         report: Report) -> JobInfo:
    if not JOB_NAME.match(attr.text):
        report(f"job name '{attr.text}' must be lower-case letters, digits, '_', '.' or '-', "
               "starting with a letter (at most 100)", attr.text_span)
    # A job with a bad name or signature is still in the table (its payload UNKNOWN), so its
    # `enqueue` calls are not also reported: one mistake, one message.
    payload = _job_payload(fn, attr, report) or UNKNOWN
    return JobInfo(attr.text, fn.name, payload, options.get("attempts", JOB_ATTEMPTS),
                   options.get("backoff", JOB_BACKOFF_MS), options.get("deadline", JOB_DEADLINE_MS),
                   attr.text_span)


def _job_payload(fn: FunctionInfo, attr: syntax.BackgroundAttr, report: Report) -> Type | None:
    """The payload class of `async def f(db: Db, payload: C)`, or None after a report."""
    shape = f"a job takes (db: Db, payload: C) where C is a class: 'async def {fn.name}(db: Db, " \
            "payload: C) -> Result[unit, Error]'"
    if len(fn.params) != 2:
        count = f"{len(fn.params)} parameter{'' if len(fn.params) == 1 else 's'}"
        report(f"{shape}; '{fn.name}' takes {count}", fn.decl.name_span)
        return None
    (_, db), (name, payload) = fn.params
    if db not in (DB, UNKNOWN):
        report(f"{shape}; its first parameter is {format_type(db)}", fn.decl.params[0].span)
        return None
    if payload == UNKNOWN:
        return None
    if not isinstance(payload, ClassRef):
        report(f"{shape}; parameter '{name}' is {format_type(payload)}", fn.decl.params[1].span)
        return None
    return payload


def _schedule(fn: FunctionInfo, attr: syntax.BackgroundAttr, options: dict[str, int],
              report: Report) -> ScheduleInfo | None:
    if len(fn.params) != 1 or fn.params[0][1] not in (DB, UNKNOWN):
        report(f"a scheduled function takes one parameter, the database: 'async def {fn.name}"
               f"(db: Db) -> Result[unit, Error]'", fn.decl.name_span)
        return None
    deadline = options.get("deadline", SCHEDULE_DEADLINE_MS)
    if attr.kind is TriggerKind.EVERY:
        period = duration_ms(attr.text)
        if period is None or not MIN_PERIOD_MS <= period <= MAX_DURATION_MS:
            report(f"the period of @every must be {DURATION_TEXT}, from 1s to 7 days, found "
                   f"'{attr.text}'", attr.text_span)
            return None
        return ScheduleInfo(fn.name, period, "", deadline, attr.text_span)
    problem = cron_problem(attr.text)
    if problem is not None:
        report(f"bad cron expression '{attr.text}': {problem}", attr.text_span)
        return None
    return ScheduleInfo(fn.name, 0, attr.text, deadline, attr.text_span)


def cron_problem(expression: str) -> str | None:
    """Why `expression` is not a five-field cron expression (minute hour day month weekday),
    or None. Read by croniter, the library the runtime computes the next run with."""
    fields = expression.split()
    if len(fields) != 5:
        return (f"it has {len(fields)} fields; a cron expression has five: minute, hour, "
                "day of month, month, day of week (e.g. '0 3 * * *')")
    from croniter import CroniterBadDateError, croniter  # only programs with @cron import it

    if not croniter.is_valid(expression):
        return "a field is out of range or malformed (minute 0-59, hour 0-23, day 1-31, " \
               "month 1-12, weekday 0-6)"
    try:
        croniter(expression, 0).get_next(float)
    except CroniterBadDateError:
        return "no date ever matches it (such as the 31st of February)"
    return None
