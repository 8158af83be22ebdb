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
from svc.dependencies.environment import python_path
from svc.rules.settings import Settings

MODULE_NAME = "__svc_program__"
#: The generated configuration table and settings (svc.compiler.codegen.pyast).
CONFIG_TABLE = "_svc_CONFIG"
SETTINGS = "_svc_SETTINGS"


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
    classes = namespace.get(CONFIG_TABLE)
    if classes is None:
        return []
    from svc.runtime.lib.config import load

    table = settings_of(namespace).config
    return load((None if table is None else dict(table), classes))


def use_packages(folders: tuple[str, ...]) -> None:
    """Put a project's installed Python packages (svc.dependencies.environment) at the front
    of the import path, once each, so its `@python` functions import them before anything
    else of the same name. Generated code imports those modules as it starts
    (svc.runtime.lib.python_calls), so this comes before `load_namespace`."""
    for folder in reversed(folders):
        if folder not in sys.path:
            sys.path.insert(0, folder)


def settings_of(namespace: dict) -> Settings:
    """The program's settings (svc.toml's tables), as its entry module holds them."""
    found = namespace.get(SETTINGS)
    return found if isinstance(found, Settings) else Settings()


def run_program(code: list[tuple[str, types.CodeType]], base_dir: str | None) -> int:
    """Run `main` (on uvloop where available) and return the exit status: 0, 130 after
    Ctrl+C, or 1 after an `Err` from main or a run-time fault (one `error:` line on stderr).
    Relative database paths resolve against `base_dir` (the project folder), or against the
    working directory when it is None."""
    process.raise_recursion_limit()
    use_packages(python_path(base_dir))
    try:
        namespace = load_namespace(code)
        problems = read_configuration(namespace)
        if problems:
            for problem in problems:
                print(f"error: {escape_controls(problem)}", file=sys.stderr)
            return 1
        if base_dir is not None:
            from svc.runtime.db import set_base_directory

            set_base_directory(base_dir)
        from svc.runtime import services

        program = services.Services(settings_of(namespace), name=program_name(code, base_dir))
        with services.running(program):  # main, and every task and server it starts
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


def program_name(code: list[tuple[str, types.CodeType]], base_dir: str | None) -> str:
    """The program's name, the `service.name` of its spans unless OTEL_SERVICE_NAME says
    otherwise (svc.runtime.observability.tracing): the project's folder, else the first file's
    name."""
    from pathlib import PurePath

    if base_dir is not None:
        return PurePath(base_dir).name or "svc"
    return (PurePath(code[0][0]).stem or "svc") if code else "svc"


def _run_main(main):
    import inspect

    if not inspect.iscoroutinefunction(main):
        return main()
    return process.run(main())
