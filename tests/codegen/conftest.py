"""Compile-and-run helpers for the semantics tests: small main-only svc programs run in this
process through the real compiler, code generator and loader, checking what they print."""

from __future__ import annotations

import textwrap

import pytest

from svc.compiler.driver import print_diagnostics
from svc.loader import CompiledProgram, compile_target, run_program


class Runner:
    def __init__(self, tmp_path, capsys) -> None:
        self.tmp_path = tmp_path
        self.capsys = capsys

    def __call__(self, source: str) -> tuple[int, str, str]:
        """Compile and run `source`; returns (exit status, stdout, stderr)."""
        path = self.tmp_path / "prog.svc"
        path.write_text(textwrap.dedent(source))
        compiled = compile_target(str(path), None)
        if not isinstance(compiled, CompiledProgram):
            print_diagnostics(compiled, {})
            pytest.fail(f"program did not compile: {self.capsys.readouterr().err}")
        self.capsys.readouterr()
        status = run_program(compiled, None)
        out, err = self.capsys.readouterr()
        return status, out, err

    def output(self, source: str) -> list[str]:
        """Run a program that must succeed; its printed lines."""
        status, out, err = self(source)
        assert status == 0, err
        return out.splitlines()


@pytest.fixture
def run(tmp_path, capsys) -> Runner:
    return Runner(tmp_path, capsys)
