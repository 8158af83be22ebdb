"""The `svcc` command line: check, run and build svc programs.

Everything every command shares is here, once: the arguments, the usage check (exit 2), the
guard that turns an internal failure into one `error:` line (exit 1), Ctrl+C (exit 130), a
reader that goes away (`svcc ... | head -1`: quiet) and standard streams the caller closed.
The commands themselves are thin: the pipeline compiles, the runner runs, the bundler builds.
Those are imported when a command needs them, so `svcc --version` stays fast and `svcc check`
never imports the server.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Any, Callable

from svc import __version__
from svc.process import on_sigterm, reopen_closed_standard_streams, silence_stdout

if TYPE_CHECKING:  # imported by the commands that use them, see the docstring
    from svc.pipeline import Failed, Target


class _Version(argparse.Action):
    """`svcc --version`: the version, and whether the runtime's request path is compiled
    (svc.native), asked only when this option is given."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from svc import native

        print(f"svcc {__version__}\n{native.describe()}")
        parser.exit()


def _add_target(parser: argparse.ArgumentParser) -> None:
    """FILE or --project DIR: the program to work on."""
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("file", nargs="?", help="the entry .svc file")
    group.add_argument("--project", metavar="DIR", help="a project folder with svc.toml")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="svcc", description="The svc compiler and runtime.")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show svcc's version and the runtime it runs programs on, and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = commands.add_parser("check", help="check a program and report every error")
    _add_target(check)
    check.add_argument("--emit-python", action="store_true",
                       help="print the generated Python (for debugging the compiler)")
    check.add_argument("--database-url", metavar="URL",
                       help="check PostgreSQL SQL in this database (inside a transaction rolled "
                            "back at the end) instead of a private cluster")
    check.add_argument("--unchecked", action="store_true",
                       help="list every SQL statement built at run time (not checked)")
    check.add_argument("--against", metavar="REV",
                       help="also check the SQL of an older version (a git revision, or its "
                            "project folder) against this version's migrations")

    run = commands.add_parser("run", help="compile a program and run it")
    _add_target(run)
    run.add_argument("--watch", action="store_true",
                     help="restart the server when a file of the program changes")

    commands.add_parser("lsp", help="the svc language server, on stdin/stdout (for editors)")

    build = commands.add_parser("build", help="build one self-contained executable")
    _add_target(build)
    build.add_argument("-o", "--output", metavar="OUT", required=True, help="executable to write")

    test = commands.add_parser("test", help="run the test_* functions of the *_test.svc files")
    _add_target(test)
    test.add_argument("--timeout", metavar="SECONDS", type=_positive_seconds, default=10.0,
                      help="time limit of each test (default 10)")

    openapi = commands.add_parser("openapi", help="print the OpenAPI 3.1 document of the API")
    _add_target(openapi)
    openapi.add_argument("--output", metavar="FILE", help="write the document to FILE")

    asyncapi = commands.add_parser(
        "asyncapi", help="print the AsyncAPI 3.0 document of the streams and topics")
    _add_target(asyncapi)
    asyncapi.add_argument("--output", metavar="FILE", help="write the document to FILE")

    client = commands.add_parser(
        "client", help="print a typed client of the API (TypeScript or JavaScript)")
    _add_target(client)
    client.add_argument("--lang", required=True, choices=("ts", "js"),
                        help="ts: a TypeScript module; js: the same in plain JavaScript")
    client.add_argument("-o", "--output", metavar="OUT", help="write the client to OUT")

    routes = commands.add_parser("routes", help="print the route table and each route's guards")
    _add_target(routes)

    install = commands.add_parser(
        "install", help="install the project's Python packages ([dependencies]) and lock them")
    install.add_argument("--project", metavar="DIR", default=".",
                         help="the project folder with svc.toml (default: this folder)")

    fmt = commands.add_parser("fmt", help="rewrite .svc files in the canonical layout")
    fmt.add_argument("files", nargs="*", metavar="PATH",
                     help=".svc files, or folders whose .svc files to format")
    fmt.add_argument("--project", metavar="DIR", help="every .svc file of a project folder")
    fmt.add_argument("--check", action="store_true",
                     help="change nothing; list the files not in the layout (exit 1 if any)")
    return parser


def _positive_seconds(text: str) -> float:
    """A time limit: a finite number of seconds above zero (else argparse's usage error)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1e9:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got '{text}'")
    return value


def main(argv: list[str] | None = None) -> int:
    reopen_closed_standard_streams()
    args = build_parser().parse_args(argv)
    try:
        return _guarded(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader of our output went away (`svcc check ... | head -1`)
        silence_stdout()
        return 1


def usage_error(file: str | None, project: str | None) -> str | None:
    """Problems with the command line itself (exit 2), before any compiling."""
    if project is not None:
        if not os.path.isdir(project):
            return f"project folder '{project}' does not exist"
        if not os.path.isfile(os.path.join(project, "svc.toml")):
            return f"no svc.toml in project folder '{project}'"
        return None
    if file is None:
        return "give a .svc file or --project DIR"
    if not os.path.exists(file):
        return f"cannot find file '{file}'"
    if not os.path.isfile(file):
        return f"'{file}' is not a file"
    if not os.access(file, os.R_OK):
        return f"cannot read '{file}': permission denied"
    return None


def fmt_usage_error(files: list[str], project: str | None) -> str | None:
    """`svcc fmt`'s usage check: DIR, or each FILE, as every command checks them."""
    if project is not None and files:
        return "give .svc files or --project DIR, not both"
    if project is not None:
        return usage_error(None, project)
    if not files:
        return "give .svc files or --project DIR"
    for file in files:
        if os.path.isdir(file):  # a folder: its .svc files, as gofmt and ruff format take them
            continue
        problem = usage_error(file, None)
        if problem:
            return problem
    return None


def _guarded(args: Any) -> int:
    """The usage check, then the command; a bug of ours is one `error:` line and exit 1,
    never a traceback."""
    try:
        usage = usage_error(args.file, args.project) if hasattr(args, "file") else None
        if args.command == "install":
            usage = usage_error(None, args.project)
        if hasattr(args, "files"):
            usage = fmt_usage_error(args.files, args.project)
        if usage:
            print(f"error: {usage}", file=sys.stderr)
            return 2
        return COMMANDS[args.command](args)
    except BrokenPipeError:  # our reader is gone: `main` ends quietly
        raise
    except Exception as exc:  # noqa: BLE001 - the last line of defence, see docstring
        print(f"error: internal compiler error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def _target(args: Any) -> Target:
    from svc.pipeline import Target

    return Target(file=args.file, project=args.project)


def _report(failed: Failed) -> None:
    """Print a failed pipeline's diagnostics, as every command shows them."""
    from svc.compiler.diagnostics import render_all

    print(render_all(failed.diagnostics, failed.sources), file=sys.stderr)


# --- svcc check -------------------------------------------------------------------------------

def check_command(args: Any) -> int:
    """`svcc check FILE` / `svcc check --project DIR [--emit-python] [--database-url URL]
    [--unchecked] [--against REV]`: 0 good, 1 errors."""
    import ast

    from svc import pipeline
    from svc.compiler.diagnostics import plural
    from svc.compiler.sql.schemas import Schemas

    if args.against and not args.project:
        print("error: --against needs --project (the migrations are a project's)",
              file=sys.stderr)
        return 2
    with Schemas(postgres="prepare", database_url=args.database_url) as schemas:
        checked = pipeline.check(_target(args), schemas=schemas)
        if isinstance(checked, pipeline.Failed):
            _report(checked)
            return 1
        if args.against and _check_against(args.against, checked, schemas):
            return 1
    if args.emit_python:
        for path, module in pipeline.generate(checked):
            print(f"# --- {path} ---")
            print(ast.unparse(module))
        return 0
    program, sql = checked.program, checked.sql
    if args.unchecked:
        for use in sql.unchecked:
            print(f"{use.span.file}:{use.span.line}:{use.span.col}: {use.builtin}: SQL built "
                  "at run time, not checked")
    print(f"ok: {program.entry} ({plural(len(program.modules), 'file')}, "
          f"{plural(len(program.routes), 'route')})")
    if sql.levels:
        unchecked = f"; {len(sql.unchecked)} built at run time, not checked (--unchecked lists " \
                    "them)" if sql.unchecked else ""
        print(f"sql: {plural(sql.checked, 'statement')} checked, " + "; ".join(
            f"{dialect} {level}" for dialect, level in sql.levels.items()) + unchecked)
    _print_retries(program)
    return 0


def _print_retries(program: Any) -> None:
    """Which routes with a transaction run again after a clash, and why the others do not."""
    retried = [f"{r.method} {r.path}" for r in program.routes if r.retried]
    if retried:
        print(f"retried after a clash: {', '.join(retried)}")
    for route in program.routes:
        if route.not_retried_because:
            print(f"not retried after a clash: {route.method} {route.path} "
                  f"({route.not_retried_because})")


def _check_against(rev: str, checked: Any, schemas: Any) -> bool:
    """`--against REV`: the old version's SQL against these migrations; whether it failed."""
    from svc import pipeline
    from svc.tools.sql_against import check_against

    found = check_against(rev, checked.project_dir, checked.program.migrations, schemas)
    if isinstance(found, str):
        print(f"error: {found}", file=sys.stderr)
        return True
    if found.diagnostics:
        _report(pipeline.Failed(found.diagnostics, found.sources))
        return True
    print(f"ok: the SQL of {rev} ({found.report.checked} statements) works with these "
          "migrations")
    return False


# --- svcc run ---------------------------------------------------------------------------------

def run_command(args: Any) -> int:
    """`svcc run FILE` / `svcc run --project DIR`: compile, then run `main` in this process.
    A compile error prints the diagnostics and exits 1 without starting anything."""
    from svc import pipeline
    from svc.runner import run_program

    if args.watch:
        from svc.tools.watch import watch_and_serve

        return watch_and_serve(_target(args))
    compiled = pipeline.compile(_target(args))
    if isinstance(compiled, pipeline.Failed):
        _report(compiled)
        return 1
    return run_program(compiled.code, base_dir=compiled.project_dir)


# --- svcc build -------------------------------------------------------------------------------

class _Terminated(BaseException):
    """SIGTERM during a build: unwinds like Ctrl+C, so PyInstaller is stopped too."""


def _terminate(signum: int, frame: Any) -> None:
    raise _Terminated()


def build_command(args: Any) -> int:
    """`svcc build FILE -o OUT` / `svcc build --project DIR -o OUT`: 0 built, 1 failed,
    143 when stopped by SIGTERM (PyInstaller is stopped with it)."""
    from svc.bundle import BuildError

    try:
        with on_sigterm(_terminate):
            return _build(args)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except _Terminated:
        return 128 + signal.SIGTERM


def _build(args: Any) -> int:
    from svc import bundle, pipeline
    from svc.dependencies.environment import python_path

    started = time.monotonic()
    output = bundle.output_path(args.output)
    target = _target(args)
    bundle.progress(1, f"checking and compiling {target.display_name}")
    compiled = pipeline.compile(target)
    if isinstance(compiled, pipeline.Failed):
        _report(compiled)  # exactly as `svcc check` shows them
        return 1
    packages = python_path(compiled.project_dir)  # checked against svc.lock by the pipeline
    bundle.build_executable(compiled.code, output, packages[0] if packages else None)
    elapsed = time.monotonic() - started
    bundle.progress(4, f"done: {output} ({bundle.size_text(os.path.getsize(output))}, "
                       f"{elapsed:.1f} s)")
    return 0


# --- svcc lsp ---------------------------------------------------------------------------------

def lsp_command(args: Any) -> int:
    """`svcc lsp`: the language server on stdin/stdout, until the editor says exit."""
    from svc.tools.lsp import serve_stdio

    return serve_stdio()


# --- svcc test --------------------------------------------------------------------------------

def test_command(args: Any) -> int:
    """`svcc test FILE|--project DIR [--timeout SECONDS]`: 0 all passed, 1 a test failed or the
    program or its tests have errors, 2 FILE is a test file."""
    from svc.tools import test_runner

    return test_runner.test_command(args.file, args.project, args.timeout)


# --- svcc openapi -----------------------------------------------------------------------------

def openapi_command(args: Any) -> int:
    """`svcc openapi FILE|--project DIR [--output FILE]`: 0 written, 1 errors."""
    from svc.tools.openapi import openapi_command as write_document

    return write_document(args.file, args.project, args.output)


# --- svcc asyncapi ----------------------------------------------------------------------------

def asyncapi_command(args: Any) -> int:
    """`svcc asyncapi FILE|--project DIR [--output FILE]`: 0 written, 1 errors."""
    from svc.tools.asyncapi import asyncapi_command as write_document

    return write_document(args.file, args.project, args.output)


# --- svcc client ------------------------------------------------------------------------------

def client_command(args: Any) -> int:
    """`svcc client --lang ts|js FILE|--project DIR [-o OUT]`: 0 written, 1 errors."""
    from svc.tools.client.command import client_command as write_client

    return write_client(args.file, args.project, args.lang, args.output)


# --- svcc routes ------------------------------------------------------------------------------

def routes_command(args: Any) -> int:
    """`svcc routes FILE|--project DIR`: 0 printed, 1 errors."""
    from svc.tools.routes import routes_command as print_table

    return print_table(args.file, args.project)


# --- svcc fmt ---------------------------------------------------------------------------------

def fmt_command(args: Any) -> int:
    """`svcc fmt PATH...|--project DIR [--check]`: 0 in the layout (now), 1 a file has errors
    or, with --check, is not in the layout."""
    from svc.tools.fmt import fmt_command as format_files

    return format_files(args.files, args.project, args.check)


# --- svcc install -----------------------------------------------------------------------------

def install_command(args: Any) -> int:
    """`svcc install [--project DIR]`: 0 installed (or nothing to install), 1 svc.toml has
    errors or the install failed (having changed nothing)."""
    from svc import pipeline
    from svc.compiler.diagnostics import plural
    from svc.dependencies.install import InstallError, install, uninstall

    project, failed = pipeline.read_project(args.project)
    if project is None:
        _report(failed)
        return 1
    if not project.dependencies_table:
        removed = uninstall(args.project)
        print("svc.toml lists no Python dependencies: nothing to install"
              + (" (removed the old .svc/python and svc.lock)" if removed else ""))
        return 0
    try:
        done = install(args.project, project.dependencies_table, project.dependencies)
    except InstallError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    how = "the versions svc.lock pins" if done.from_lock else "svc.toml's ranges, svc.lock written"
    names = ", ".join(f"{p.name} {p.version}" for p in done.lock.packages)
    print(f"installed {plural(len(done.lock.packages), 'Python package')} from {how}: {names}")
    return 0


COMMANDS: dict[str, Callable[[Any], int]] = {
    "check": check_command, "run": run_command, "build": build_command, "test": test_command,
    "openapi": openapi_command, "asyncapi": asyncapi_command, "lsp": lsp_command,
    "fmt": fmt_command, "routes": routes_command, "install": install_command,
    "client": client_command}


if __name__ == "__main__":
    sys.exit(main())
