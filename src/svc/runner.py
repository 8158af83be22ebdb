"""The runner: run a compiled program's `main` in this process and turn its end into an exit
status.

Shared by `svcc run` (right after compiling) and by built executables (which unmarshal the
code objects). The generated modules run, in load order, in one namespace: the `__dict__` of a
module registered in `sys.modules`, so msgspec can resolve the generated classes' field
annotations by name. The runtime is imported only once a program runs.

Whatever goes wrong, the user sees one `error: ...` line, never a traceback.
"""

from __future__ import annotations

import os
import sys
import traceback
import types

from svc.compiler.diagnostics import escape_controls
from svc.contract import RECURSION_LIMIT

MODULE_NAME = "__svc_program__"


def load_namespace(code: list[tuple[str, types.CodeType]]) -> dict:
    """Execute the modules' code in order into a fresh namespace and return it."""
    module = types.ModuleType(MODULE_NAME)
    sys.modules[MODULE_NAME] = module
    for _path, module_code in code:
        exec(module_code, module.__dict__)
    return module.__dict__


def run_program(code: list[tuple[str, types.CodeType]], base_dir: str | None) -> int:
    """Run `main` (on uvloop where available) and return the exit status: 0, 130 after
    Ctrl+C, or 1 after an `Err` from main or a run-time fault (one `error:` line on stderr).
    Relative database paths resolve against `base_dir` (the project folder), or against the
    working directory when it is None."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    try:
        namespace = load_namespace(code)
        if base_dir is not None:
            from svc.runtime.db import set_base_directory

            set_base_directory(base_dir)
        result = _run_main(namespace["main"])
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - a fault out of main is reported, not raised
        _flush_stdout()
        print(f"error: {escape_controls(fault_message(exc))}", file=sys.stderr)
        return 1
    _flush_stdout()
    from svc.runtime.support import SvcError

    if isinstance(result, SvcError):  # one line, whatever the message quotes (an env value)
        print(f"error: {escape_controls(result.message)}", file=sys.stderr)
        return 1
    return 0


def _run_main(main):
    import inspect

    if not inspect.iscoroutinefunction(main):
        return main()
    try:
        import uvloop
    except ImportError:  # Windows: plain asyncio
        import asyncio

        return asyncio.run(main())
    return uvloop.run(main())


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def fault_message(exc: BaseException) -> str:
    """A run-time fault as one line: what happened and the innermost `.svc` line, e.g.
    `integer overflow (i64) (at prog.svc:12, in add)`."""
    from svc.runtime.support import SvcFault

    if isinstance(exc, SvcFault):
        text = str(exc)
    elif isinstance(exc, RecursionError):
        text = "recursion too deep"
    else:
        text = f"internal fault: {type(exc).__name__}: {exc}"
    where = svc_location(exc)
    return f"{text} (at {where})" if where else text


def svc_location(exc: BaseException) -> str | None:
    """`file.svc:line, in function` of the innermost frame of `exc` in svc code, or None."""
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.endswith(".svc"):
            found = frame
    if found is None:
        return None
    return f"{found.filename}:{found.lineno}, in {found.name}"


# --- the process's standard streams -----------------------------------------------------------

def reopen_closed_standard_streams() -> None:
    """Put /dev/null behind descriptors 0-2 and sys.stdin/out/err when the caller closed them
    (`svcc run prog <&- >&-`); called first thing by `svcc` and by built executables.

    Otherwise the server's listening socket takes one of those numbers, and libuv aborts the
    process when it closes a socket numbered 0-2 (at the end of a graceful shutdown); and
    Python leaves `sys.stdout` None, which printing and flushing do not expect.
    """
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, encoding="utf-8", closefd=False))


def silence_stdout() -> None:
    """Point stdout at /dev/null once its reader is gone (`svcc ... | head -1`), so later
    writes and the flush at exit go nowhere quietly instead of raising BrokenPipeError."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
