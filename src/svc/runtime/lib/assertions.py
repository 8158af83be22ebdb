"""`assert_true` and `assert_eq`: the assertions of svc tests (`svcc test`).

A failed assertion is a run-time fault (`AssertionFailed` is an `SvcFault`): it stops the test
that made it, and in a program it is handled like any other fault (a logged 500 in a handler,
`error:` and exit 1 out of `main`). The code generator passes the assertion's own
`file.svc:line`, so a failure names the line of the test file where the assertion is written,
whatever functions the test called before it.
"""

from __future__ import annotations

from svc.runtime.lib.support import Html, SvcError, SvcFault

#: Longer shown values are cut (a list of 100 tasks would flood the report).
SHOW_LIMIT = 400


class AssertionFailed(SvcFault):
    """A failed `assert_true`/`assert_eq`; `where` is the assertion's `file.svc:line` and
    `details` the lines that show the values (empty for `assert_true`)."""

    def __init__(self, where: str, headline: str, details: tuple[str, ...] = ()) -> None:
        super().__init__("; ".join((headline, *details)))  # one line, out of `main` or a handler
        self.where = where
        self.headline = headline
        self.details = details


def assert_true(condition: bool, where: str) -> None:
    if condition is not True:
        raise AssertionFailed(where, "assert_true failed: the condition is False")


def assert_eq(left, right, where: str) -> None:
    """Compare by `==`, as svc's `==` does (classes and lists structurally)."""
    if not left == right:
        raise AssertionFailed(where, "assert_eq failed: the values differ",
                              (f"left:  {show(left)}", f"right: {show(right)}"))


def show(value) -> str:
    """An svc value as svc source would write it (`Task(id=1, title="a")`, `[1, 2]`,
    `None`), cut at `SHOW_LIMIT` characters."""
    text = _show(value)
    if len(text) > SHOW_LIMIT:
        return text[:SHOW_LIMIT] + f"... ({len(text)} characters)"
    return text


def _show(value) -> str:
    if value is None:
        return "None"
    if isinstance(value, (bool, int)):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"bytes({_quoted(bytes(value).decode('utf-8', errors='replace'))})"
    if isinstance(value, list):
        return "[" + ", ".join(_show(item) for item in value) + "]"
    if isinstance(value, SvcError):
        return f"Err({value.kind}: {_quoted(value.message)})"
    if isinstance(value, Html):
        return f"html({_quoted(value.text)})"
    attributes = getattr(value, "__struct_fields__", None)
    if attributes is not None:  # a class: svc names (a keyword-named class is `_svc_u_<name>`)
        names = [entry[0] for entry in getattr(value, "__svc_fields__", ())] or attributes
        shown = ", ".join(f"{name}={_show(getattr(value, attribute))}"
                          for name, attribute in zip(names, attributes))
        return f"{type(value).__name__.removeprefix('_svc_u_')}({shown})"
    return f"<{type(value).__name__}>"  # a Db: no text form


def _quoted(text: str) -> str:
    """A double-quoted string with svc's escapes, control characters escaped so one value
    stays on one report line."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)
