"""The runner: run a compiled program's `main` in this process and turn its end into an exit
status.

Shared by `svcc run` (right after compiling) and by built executables (which unmarshal the
code objects). The generated modules run, in load order, in one namespace: the `__dict__` of a
module registered in `sys.modules`, so msgspec can resolve the generated classes' field
annotations by name. The runtime is imported only once a program runs.

Whatever goes wrong, the user sees one `error: ...` line, never a traceback.
"""

from __future__ import annotations

import sys
import types

from svc import process
from svc.compiler.diagnostics import escape_controls

MODULE_NAME = "__svc_program__"
#: The generated configuration table (svc.compiler.codegen.pyast.CONFIG).
CONFIG_TABLE = "_svc_CONFIG"


def load_namespace(code: list[tuple[str, types.CodeType]]) -> dict:
    """Execute the modules' code in order into a fresh namespace and return it."""
    module = types.ModuleType(MODULE_NAME)
    sys.modules[MODULE_NAME] = module
    for _path, module_code in code:
        exec(module_code, module.__dict__)
    return module.__dict__


def read_configuration(namespace: dict) -> list[str]:
    """Read the configuration of a program that calls `config[T]()` (svc.runtime.lib.config), as
    it starts: the problems found, each a line naming the key; [] when all is well, and for a
    program without configuration (which never imports the module)."""
    table = namespace.get(CONFIG_TABLE)
    if table is None:
        return []
    from svc.runtime.lib.config import load

    return load(table)


def run_program(code: list[tuple[str, types.CodeType]], base_dir: str | None) -> int:
    """Run `main` (on uvloop where available) and return the exit status: 0, 130 after
    Ctrl+C, or 1 after an `Err` from main or a run-time fault (one `error:` line on stderr).
    Relative database paths resolve against `base_dir` (the project folder), or against the
    working directory when it is None."""
    process.raise_recursion_limit()
    try:
        namespace = load_namespace(code)
        problems = read_configuration(namespace)
        if problems:
            for problem in problems:
                print(f"error: {escape_controls(problem)}", file=sys.stderr)
            return 1
        name_traces(code, base_dir)
        if base_dir is not None:
            from svc.runtime.db import set_base_directory

            set_base_directory(base_dir)
        result = _run_main(namespace["main"])
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - a fault out of main is reported, not raised
        process.flush_quietly(sys.stdout)
        print(f"error: {escape_controls(process.fault_message(exc))}", file=sys.stderr)
        return 1
    process.flush_quietly(sys.stdout)
    from svc.runtime.lib.support import SvcError

    if isinstance(result, SvcError):  # one line, whatever the message quotes (an env value)
        print(f"error: {escape_controls(result.message)}", file=sys.stderr)
        return 1
    return 0


def name_traces(code: list[tuple[str, types.CodeType]], base_dir: str | None) -> None:
    """The program's name, the `service.name` of its spans unless OTEL_SERVICE_NAME says
    otherwise (svc.runtime.observability.tracing): the project's folder, else the first file's name."""
    from pathlib import PurePath

    from svc.runtime.observability import tracing

    if base_dir is not None:
        tracing.program = PurePath(base_dir).name or tracing.program
    elif code:
        tracing.program = PurePath(code[0][0]).stem or tracing.program


def _run_main(main):
    import inspect

    if not inspect.iscoroutinefunction(main):
        return main()
    return process.run(main())
