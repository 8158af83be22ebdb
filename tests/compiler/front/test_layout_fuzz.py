"""Fuzzing the canonical layout (`svcc fmt`), seeded like test_fuzz.py:

- on mutated programs it only ever gives a text or diagnostics, never an exception (its own
  check that the tokens and comments did not change raises), and its text is a fixed point;
- on every seed program with its layout scrambled (spaces added between tokens, indentation
  doubled) it gives exactly the layout of the unscrambled program: the layout depends on the
  tokens, not on how they were spaced.
"""

from __future__ import annotations

import random

import pytest

from svc.compiler.front.layout import format_text
from svc.compiler.front.lexer import tokenize
from svc.compiler.source import SourceFile
from tests.compiler.test_fuzz import EXAMPLES, LAYOUT, SEED, job_program, mutate, seeds


def formatted(text: str) -> str | None:
    return format_text("fuzz.svc", text)[0]


def scrambled(rng: random.Random, text: str) -> str:
    """The same tokens and comments, spaced differently: blanks added between tokens and
    before comments, every line's indentation doubled."""
    source = SourceFile("fuzz.svc", text)
    cuts: dict[int, list[int]] = {}
    for token in tokenize(source)[0]:
        if token.kind not in LAYOUT and token.kind != "-":  # -9223372036854775808 stays one
            cuts.setdefault(token.line, []).append(token.end_col - 1)
    lines = []
    for number, line in enumerate(source.lines, 1):
        for cut in sorted(cuts.get(number, []), reverse=True):
            line = line[:cut] + " " * rng.choice((0, 0, 1, 3)) + line[cut:]
        indent = len(line) - len(line.lstrip(" "))
        lines.append(" " * indent + line)
    return "\n".join(lines) + "\n"


@pytest.mark.fuzz
def test_the_layout_never_raises_on_mutated_programs_and_is_a_fixed_point() -> None:
    rng = random.Random(SEED)
    programs = [data for _, data in seeds()]
    for index in range(EXAMPLES):
        data = mutate(rng, rng.choice(programs))
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        try:
            result = formatted(text)
            assert result is None or formatted(result) == result
        except Exception as exc:  # noqa: BLE001 - reported with what reproduces it
            raise AssertionError(f"seed {SEED}, input {index}: {exc!r}\n{text}") from exc


@pytest.mark.fuzz
def test_scrambled_spacing_gives_the_same_layout() -> None:
    rng = random.Random(SEED)
    checked = 0
    for path, data in seeds():
        text = data.decode("utf-8", errors="replace")
        canonical = formatted(text)
        if canonical is None:
            continue  # the corpus's syntax errors
        for _ in range(3):
            assert formatted(scrambled(rng, text)) == canonical, path
        checked += 1
    assert checked > 50


@pytest.mark.fuzz
def test_random_job_attributes_never_raise_and_are_a_fixed_point() -> None:
    """Programs with random @job/@every/@cron attributes (test_fuzz.job_program), their
    spacing scrambled: the layout gives a text that lays out to itself and does not depend on
    the spacing, or diagnostics; never an exception."""
    rng = random.Random(SEED)
    laid_out = 0
    for index in range(EXAMPLES):
        text = job_program(rng)
        try:
            result = formatted(text)
            assert result is None or formatted(result) == result
            assert result is None or formatted(scrambled(rng, text)) == result
        except Exception as exc:  # noqa: BLE001 - reported with what reproduces it
            raise AssertionError(f"seed {SEED}, input {index}: {exc!r}\n{text}") from exc
        laid_out += result is not None
    assert laid_out > EXAMPLES // 4
