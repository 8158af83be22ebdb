"""`python -m svc.tools.vscode_grammar`: the VS Code grammar's builtin names, made from the records.

The grammar (editors/vscode/syntaxes/svc.tmLanguage.json) highlights a builtin where it is
called, so it must name every builtin. Those names are not written by hand: they come from the
builtin records (svc.compiler.builtin_table), and this command writes them into the grammar's
`builtin-call` rule. Adding a builtin is adding its record (and its runtime function and
reference entry), then running this command; `--check` (run by the editor tests) exits 1 when
the grammar is not what the records make, so a stale grammar cannot land.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from svc.compiler.builtin_table import BUILTINS, RANGE

GRAMMAR = Path(__file__).resolve().parents[3] / "editors" / "vscode" / "syntaxes" / "svc.tmLanguage.json"

#: The `match` line of the `builtin-call` rule, as the grammar file writes it.
_CALL_LINE = re.compile(r'(?P<head>"builtin-call": \{\s*"comment": "[^"\n]*",\s*"match": )"[^\n]*",')


def builtin_call_pattern() -> str:
    """The rule's regular expression: a builtin's name followed by `(` or `[` (type arguments)."""
    names = [*BUILTINS, RANGE]
    return r"\b(?:" + "|".join(names) + r")\b(?=\s*[(\[])"


def made_grammar(text: str) -> str:
    """The grammar file's text with the `builtin-call` rule made from the records."""
    match = _CALL_LINE.search(text)
    if match is None:
        raise SystemExit("error: the grammar has no 'builtin-call' rule with a 'match' line")
    line = match["head"] + json.dumps(builtin_call_pattern()) + ","
    return text[:match.start()] + line + text[match.end():]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the grammar is not the one the records make")
    parser.add_argument("--grammar", type=Path, default=GRAMMAR, help=f"default: {GRAMMAR}")
    args = parser.parse_args(argv)
    grammar: Path = args.grammar
    text = grammar.read_text(encoding="utf-8")
    made = made_grammar(text)
    if args.check:
        if made != text:
            print(f"{grammar}: the builtin names are stale; run python -m svc.tools.vscode_grammar",
                  file=sys.stderr)
            return 1
        return 0
    if made != text:
        grammar.write_text(made, encoding="utf-8")
        print(f"updated {grammar}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
