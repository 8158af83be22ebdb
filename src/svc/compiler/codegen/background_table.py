"""The job and schedule tables as generated code, in the entry module:
`_svc_JOBS = [Job(...), ...]` and `_svc_SCHEDULES = [Schedule(...), ...]`, which `serve`
receives beside the route list and hands to the runtime's runners (svc.runtime.background.jobs,
svc.runtime.background.schedules). Each names the handler's Python function; a job also its payload
class, which the runner decodes the stored JSON into.
"""

from __future__ import annotations

import ast
from typing import Callable

from svc.compiler import svctypes as T
from svc.compiler.program import JobInfo, ScheduleInfo

#: `name` → an expression for a name of svc.rules.contract (imported by the generated module).
ContractName = Callable[[str], ast.expr]


def job_entries(jobs: list[JobInfo], handler_name: Callable[[str], str],
                type_value: Callable[[T.Type], ast.expr], contract: ContractName) -> list[ast.expr]:
    return [_call(contract("Job"), ast.Constant(j.name), _name(handler_name(j.handler)),
                  type_value(j.payload), ast.Constant(j.attempts), ast.Constant(j.backoff_ms),
                  ast.Constant(j.deadline_ms)) for j in jobs]


def schedule_entries(schedules: list[ScheduleInfo], handler_name: Callable[[str], str],
                     contract: ContractName) -> list[ast.expr]:
    return [_call(contract("Schedule"), ast.Constant(s.handler), _name(handler_name(s.handler)),
                  ast.Constant(s.every_ms), ast.Constant(s.cron), ast.Constant(s.deadline_ms))
            for s in schedules]


def _call(func: ast.expr, *args: ast.expr) -> ast.expr:
    return ast.Call(func=func, args=list(args), keywords=[])


def _name(name: str) -> ast.expr:
    return ast.Name(id=name, ctx=ast.Load())
