"""Lexing f-strings: `f"Hello, {name}! {{braces}}"` into one "fstr" token.

The token's value is a list of parts: a `str` for literal text (escapes and `{{ }}`
decoded), and for each `{expr}` the list of the expression's own tokens, lexed by the
ordinary lexer with their real columns and ended by the `}` token, so the parser reads the
expression like any other and a diagnostic inside the braces points into the literal.

An expression ends at the first `}` outside a string of its own (`{join(xs, "}")}` works);
it may hold strings in either quote and even another f-string. Like the rest of svc, an
f-string stays on one line.

This module uses the lexer it is given (`lexer._Lexer`) and imports nothing of it, so the
lexer can import it.
"""

from __future__ import annotations


def scan_fstring(lexer, number: int, text: str, pos: int) -> int:
    """Lex the f-string whose `f` is at text[pos]; returns the index after it."""
    quote = text[pos + 1]
    parts: list = []
    chars: list[str] = []
    i = pos + 2
    end = len(text)

    def flush() -> None:
        if chars:
            parts.append("".join(chars))
            chars.clear()

    while i < end:
        c = text[i]
        if c == quote:
            flush()
            lexer.add("fstr", parts, number, pos + 1, i + 2)
            return i + 1
        if c == "\\":
            decoded, i = lexer.escape(number, text, i)
            chars.append(decoded)
        elif c in "{}" and text[i + 1:i + 2] == c:
            chars.append(c)
            i += 2
        elif c == "{":
            flush()
            i, closed = _expression(lexer, number, text, i, parts)
            if not closed:
                break
        elif c == "}":
            lexer.error("single '}' in an f-string (write '}}' for a literal brace)",
                        number, i + 1)
            i += 1
        else:
            chars.append(c)
            i += 1
    else:
        lexer.error("unclosed f-string literal (strings end on the line they start)",
                    number, pos + 1, end + 1)
    flush()
    lexer.brackets.clear()  # the string probably swallowed their closers
    lexer.add("fstr", parts, number, pos + 1, end + 1)
    return end


def _expression(lexer, number: int, text: str, brace: int, parts: list) -> tuple[int, bool]:
    """Lex the `{expr}` opening at text[brace] into `parts`; returns (the index after its
    `}`, whether there was one)."""
    outer_tokens, outer_brackets = lexer.tokens, lexer.brackets
    reported = len(lexer.diagnostics)
    lexer.tokens, lexer.brackets = [], []
    try:
        stop = lexer.scan(number, text, brace + 1, in_braces=True)
        closed = stop < len(text) and text[stop] == "}"
        if closed:
            lexer.add("}", "}", number, stop + 1, stop + 2)
        tokens = lexer.tokens
    finally:
        lexer.tokens, lexer.brackets = outer_tokens, outer_brackets
    if not closed:
        del lexer.diagnostics[reported:]  # what the rest of the line looked like as code
        lexer.error("'{' in an f-string was never closed (write '{{' for a literal brace)",
                    number, brace + 1)
        return len(text), False
    if len(tokens) == 1:
        lexer.error("empty expression in an f-string: write {name} (or '{{' for a literal "
                    "brace)", number, brace + 1, stop + 2)
    else:
        parts.append(tokens)
    return stop + 1, True
