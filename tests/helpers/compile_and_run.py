"""Compile and run small main-only svc programs in this process, through the real pipeline and
runner, to check what they print: the `run` fixture of tests/conftest.py (the code generator's
semantics tests and the standard library's run-time tests use it)."""

from __future__ import annotations

import textwrap

import pytest

from svc.compiler.diagnostics import render_all
from svc.pipeline import Failed, Target, compile
from svc.runner import run_program


class Runner:
    def __init__(self, tmp_path, capsys) -> None:
        self.tmp_path = tmp_path
        self.capsys = capsys

    def __call__(self, source: str) -> tuple[int, str, str]:
        """Compile and run `source`; returns (exit status, stdout, stderr)."""
        path = self.tmp_path / "prog.svc"
        path.write_text(textwrap.dedent(source))
        compiled = compile(Target(file=str(path)))
        if isinstance(compiled, Failed):
            pytest.fail("program did not compile: "
                        + render_all(compiled.diagnostics, compiled.sources))
        self.capsys.readouterr()
        status = run_program(compiled.code, None)
        out, err = self.capsys.readouterr()
        return status, out, err

    def output(self, source: str) -> list[str]:
        """Run a program that must succeed; its printed lines."""
        status, out, err = self(source)
        assert status == 0, err
        return out.splitlines()

