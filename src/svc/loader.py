"""Program loading: compile an svc program to code objects and run its `main`.

Shared by `svcc run` (compile, then run in the same process) and by built executables (which
unmarshal the code objects and call `run_program`). The generated modules run, in load order,
in one namespace: the `__dict__` of a module registered in `sys.modules`, so msgspec can
resolve the generated classes' field annotations by name.

Whatever goes wrong, the user sees diagnostics or one `error: ...` line, never a traceback.
"""

from __future__ import annotations

import sys
import traceback
import types
from dataclasses import dataclass

from svc.compiler.diagnostics import escape_controls

MODULE_NAME = "__svc_program__"
#: svc calls nest this deep before a "recursion too deep" fault (Python's default is 1,000;
#: 3.11 runs Python-to-Python calls without growing the C stack, so this is safe).
RECURSION_LIMIT = 10_000


@dataclass
class CompiledProgram:
    """One code object per `.svc` file (load order), run in one shared namespace."""

    modules: list[tuple[str, types.CodeType]]
    project_dir: str | None


# --- compiling --------------------------------------------------------------------------------

def compile_target(file: str | None, project: str | None):
    """The program as code objects, or the list of diagnostics that stopped it."""
    compiled, diagnostics, _sources = _compile(file, project)
    return compiled if compiled is not None else diagnostics


def compile_and_report(file: str | None, project: str | None) -> CompiledProgram | None:
    """Like `compile_target`, but diagnostics are printed (rendered with their source lines,
    as `svcc check` does) and None is returned."""
    from svc.compiler.driver import print_diagnostics

    compiled, diagnostics, sources = _compile(file, project)
    if compiled is None:
        if diagnostics:
            print_diagnostics(diagnostics, sources)
        else:
            print("error: the program could not be compiled", file=sys.stderr)
    return compiled


def _compile(file: str | None, project: str | None):
    from svc.compiler.driver import compile_program

    program, diagnostics, sources = compile_program(file=file, project=project)
    if program is None:
        return None, diagnostics, sources
    return compile_checked(program), [], sources


def compile_checked(program) -> CompiledProgram:
    """Code generation and `compile()`: each module keeps its `.svc` path as the file name."""
    from svc.compiler.codegen import generate

    modules = [(path, compile(module, filename=path, mode="exec"))
               for path, module in generate(program)]
    return CompiledProgram(modules=modules, project_dir=program.project_dir)


# --- running ----------------------------------------------------------------------------------

def load_namespace(program: CompiledProgram) -> dict:
    """Execute the modules in order into a fresh namespace and return it."""
    module = types.ModuleType(MODULE_NAME)
    sys.modules[MODULE_NAME] = module
    for _path, code in program.modules:
        exec(code, module.__dict__)
    return module.__dict__


def run_program(program: CompiledProgram, base_dir: str | None) -> int:
    """Run `main` (on uvloop where available) and return the exit status: 0, or 1 after an
    `Err` from main or a run-time fault (one `error:` line on stderr)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    try:
        namespace = load_namespace(program)
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


def reopen_closed_standard_streams() -> None:
    """Put /dev/null behind descriptors 0-2 and sys.stdin/out/err when the caller closed them
    (`svcc run prog <&- >&-`); called first thing by `svcc` and by built executables.

    Otherwise the server's listening socket takes one of those numbers, and libuv aborts the
    process when it closes a socket numbered 0-2 (at the end of a graceful shutdown); and
    Python leaves `sys.stdout` None, which printing and flushing do not expect.
    """
    import os

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
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


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


# --- `svcc run` -------------------------------------------------------------------------------

def run_command(args) -> int:
    """`svcc run FILE` / `svcc run --project DIR`: compile, then serve in this process. A
    compile error prints the diagnostics and exits 1 without starting anything."""
    try:
        from svc.compiler.driver import _usage_error

        usage = _usage_error(args.file, args.project)
        if usage:
            print(f"error: {usage}", file=sys.stderr)
            return 2
        compiled = compile_and_report(args.file, args.project)
    except BrokenPipeError:  # our reader is gone: svcc.cli ends quietly
        raise
    except Exception as exc:  # noqa: BLE001 - never a traceback to the user
        print(f"error: internal compiler error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if compiled is None:
        return 1
    return run_program(compiled, base_dir=compiled.project_dir)
