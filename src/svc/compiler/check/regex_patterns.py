"""The checker's rules for the regular-expression builtins (`matches`, `find_all`,
`replace_re`): the pattern is a string literal, and a valid one.

A pattern is checked (and so compiled) when the program is compiled: an invalid pattern is a
diagnostic that points at the fault inside the literal, never a run-time error. The dialect is
RE2's (svc/rules/patterns.py), which matches in linear time, so no valid pattern can hang a request.
A literal `replace_re` replacement that names a group the pattern does not have is an error
too (at run time such a group would only be empty).

The functions take the `CallChecker` checking the call, so this module imports no checker.
"""

from __future__ import annotations

from typing import Any

from svc.rules import patterns
from svc.compiler.front import syntax
from svc.compiler.source import Span
from svc.compiler.svctypes import STR, Type


def pattern_argument(checker: Any, call: syntax.Call, arg: syntax.Expr) -> Type:
    """Check the pattern argument of `call`, and a literal replacement after it."""
    checker.expect(arg, STR, f"argument 2 of {call.target}: ")
    if not isinstance(arg, syntax.StrLit):
        checker.error(f"the pattern of {call.target} must be a string literal (it is checked "
                      "and compiled with the program)", arg.span)
        return STR
    problem = patterns.problem(arg.value)
    if problem is not None:
        checker.error(f"invalid regular expression: {problem.reason}{_hint(problem.reason)}",
                      _inside(arg, problem.offset))
        return STR
    if call.target == "replace_re" and len(call.args) == 3:
        _check_replacement(checker, arg.value, call.args[2])
    return STR


def _check_replacement(checker: Any, pattern: str, replacement: syntax.Expr) -> None:
    if isinstance(replacement, syntax.StrLit):
        unknown = patterns.unknown_groups(pattern, patterns.parse_replacement(replacement.value))
        if unknown:
            checker.error(f"the replacement names {', '.join(unknown)}, but the pattern has no "
                          "such group", replacement.span)


def _hint(reason: str) -> str:
    """What RE2 refuses on purpose, said as such: what backtracking alone can do."""
    if reason.startswith("invalid escape sequence: \\") and reason[-1:].isdigit():
        return " (backreferences are not supported: svc matches in linear time, RE2's syntax)"
    if reason.startswith("invalid perl operator: (?") and reason[-1:] in "=!<":
        return " (lookaround is not supported: svc matches in linear time, RE2's syntax)"
    return ""


def _inside(literal: syntax.StrLit, offset: int | None) -> Span:
    """The span of the pattern from `offset` on, when the literal is written without escapes
    on one line (its text is then the pattern); the whole literal otherwise."""
    span = literal.span
    plain = span.line == span.end_line and span.end_col - span.col == len(literal.value) + 2
    if offset is None or not plain:
        return span
    start = span.col + 1 + offset
    return Span(span.file, span.line, start, span.line, span.end_col - 1)
