"""`svcc client --lang ts|js FILE|--project DIR [-o OUT]`: check the program, then print its
client (or write it to OUT, atomically: a reader never sees half a client)."""

from __future__ import annotations

from svc.tools.client.module import client_module
from svc.tools.output import print_or_write


def client_command(file: str | None, project: str | None, lang: str, output: str | None) -> int:
    """0 written, 1 the program has errors or OUT cannot be written."""
    from svc.tools.openapi import program_title

    return print_or_write(file, project, output, lambda checked: client_module(
        checked.program, program_title(checked, file, project), lang))
