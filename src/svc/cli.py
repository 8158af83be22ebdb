"""The `svcc` command line: check, run and build svc programs.

Each subcommand is a thin wrapper: argument parsing lives here, the work lives in the module
that owns it (compiler driver, loader, bundler), imported lazily so `svcc --version` and
`svcc check` stay fast and never import the server.
"""

from __future__ import annotations

import argparse
import sys

from svc import __version__


def _add_target(parser: argparse.ArgumentParser) -> None:
    """FILE or --project DIR: the program to work on."""
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("file", nargs="?", help="the entry .svc file")
    group.add_argument("--project", metavar="DIR", help="a project folder with svc.toml")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="svcc", description="The svc compiler and runtime.")
    parser.add_argument("--version", action="version", version=f"svcc {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = commands.add_parser("check", help="check a program and report every error")
    _add_target(check)
    check.add_argument("--emit-python", action="store_true",
                       help="print the generated Python (for debugging the compiler)")

    run = commands.add_parser("run", help="compile a program and run it")
    _add_target(run)

    build = commands.add_parser("build", help="build one self-contained executable")
    _add_target(build)
    build.add_argument("-o", "--output", metavar="OUT", required=True, help="executable to write")
    return parser


def main(argv: list[str] | None = None) -> int:
    from svc.loader import reopen_closed_standard_streams, silence_stdout

    reopen_closed_standard_streams()
    args = build_parser().parse_args(argv)
    try:
        if args.command == "check":
            from svc.compiler.driver import check_command
            return check_command(args)
        if args.command == "run":
            from svc.loader import run_command
            return run_command(args)
        from svc.bundle import build_command
        return build_command(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader of our output went away (`svcc check ... | head -1`)
        silence_stdout()
        return 1


if __name__ == "__main__":
    sys.exit(main())
