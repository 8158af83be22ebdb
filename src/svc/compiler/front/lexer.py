"""The lexer: svc source text to a flat list of tokens, with INDENT/DEDENT for blocks.

It works line by line (strings never span lines) with one compiled master regex per line, so
it stays fast on large files. Bad input never raises: each problem becomes a `Diagnostic` and
lexing goes on, so one file reports all its lexical errors at once.

Token kinds: "name", "int", "float", "str", "fstr" (lex_fstring.py), "newline", "indent",
"dedent", "eof"; keywords and operators use their own text as the kind ("def", "+=", "(",
...). `true`, `false` and `null` are lexed as "True", "False" and "None".
"""

from __future__ import annotations

import re
from typing import cast

from svc.compiler.diagnostics import Diagnostic
from svc.compiler.front.lex_fstring import scan_fstring
from svc.compiler.source import SourceFile, Span

KEYWORDS = frozenset(
    "class def async await return if elif else while for in break continue pass match case "
    "try not and or let import from as True False None".split()
)
ALIASES = {"true": "True", "false": "False", "null": "None"}
#: Keywords that can only start a statement or declaration: seeing one at the start of a line
#: inside brackets means a bracket was left open, so the lexer closes it there.
STATEMENT_KEYWORDS = frozenset(
    "class def async return if elif else while for break continue pass match case let import "
    "from".split()
) | {"@"}

#: What a word lexes as when it is not a plain name.
_WORD_KINDS = {**{word: word for word in KEYWORDS}, **ALIASES}

_MASTER = re.compile(
    r"""
    [ \t]*
    (?:
    (?P<comment>\#.*)
  | (?P<number>[0-9][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]*)?)
  | (?P<fstr>f(?=["']))
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<str>"[^"\\]*"|'[^'\\]*')
  | (?P<strslow>["'])
  | (?P<op>->|\+=|-=|\*=|==|!=|<=|>=|[-+*/%<>=()\[\],:.@?])
  | (?P<end>\Z)
    )
    """,
    re.VERBOSE,
)
_INT = re.compile(r"[0-9]+(?:_[0-9]+)*\Z")
_FLOAT = re.compile(r"[0-9]+(?:_[0-9]+)*\.[0-9]+(?:_[0-9]+)*\Z")
_UNICODE_ESCAPE = re.compile(r"\{([0-9A-Fa-f]{1,6})\}")
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "0": "\0", '"': '"', "'": "'", "\\": "\\"}
_HINTS = {
    "&": " (use 'and')",
    "|": " (use 'or')",
    "!": " (use 'not', or '!=' to compare)",
    ";": " (put one statement per line)",
    "{": " (svc has no braces: use ':' and indentation)",
    "}": " (svc has no braces: use ':' and indentation)",
}


class Token:
    """One token: its kind, its value (decoded literal or text) and its place on one line."""

    __slots__ = ("kind", "value", "line", "col", "end_col", "file")

    def __init__(self, kind: str, value: object, file: str, line: int, col: int, end_col: int):
        self.kind = kind
        self.value = value
        self.file = file
        self.line = line
        self.col = col
        self.end_col = end_col

    @property
    def text(self) -> str:
        """The value of a token that holds text: a name, a keyword, a string literal."""
        return str(self.value)

    @property
    def span(self) -> Span:
        return Span(self.file, self.line, self.col, self.line, self.end_col)

    def describe(self) -> str:
        """How a diagnostic names this token: `'def'`, `name 'x'`, `end of line`."""
        if self.kind == "name":
            return f"name '{self.value}'"
        if self.kind in ("int", "float"):
            return f"number {self.value}"
        if self.kind == "str":
            return "a string"
        if self.kind in KEYWORDS:
            return f"keyword '{self.kind}'"
        return _DESCRIPTIONS.get(self.kind, f"'{self.kind}'")

    def __repr__(self) -> str:
        return f"Token({self.kind!r}, {self.value!r}, {self.line}:{self.col})"


_DESCRIPTIONS = {
    "newline": "end of line",
    "indent": "an indented block",
    "dedent": "end of block",
    "eof": "end of file",
    "fstr": "an f-string",
}


def tokenize(source: SourceFile) -> tuple[list[Token], list[Diagnostic]]:
    """Split `source` into tokens; never raises, every problem is a diagnostic."""
    lexer = _Lexer(source)
    lexer.run()
    return lexer.tokens, lexer.diagnostics


class _Lexer:
    def __init__(self, source: SourceFile):
        self.file = source.path
        self.lines = source.lines
        self.tokens: list[Token] = []
        self.diagnostics: list[Diagnostic] = []
        self.indents = [0]
        self.brackets: list[Token] = []  # open ( and [ not yet closed
        self.tab_reported = False

    def error(self, message: str, line: int, col: int, end_col: int | None = None) -> None:
        end = col + 1 if end_col is None else max(end_col, col + 1)
        self.diagnostics.append(Diagnostic(message, Span(self.file, line, col, line, end)))

    def add(self, kind: str, value: object, line: int, col: int, end_col: int) -> None:
        self.tokens.append(Token(kind, value, self.file, line, col, end_col))

    def run(self) -> None:
        for number, text in enumerate(self.lines, 1):
            self.line(number, text)
        last = len(self.lines) or 1
        end_col = len(self.lines[-1]) + 1 if self.lines else 1
        if self.brackets:
            self.unclosed()
        if self.tokens and self.tokens[-1].kind != "newline":
            self.add("newline", None, last, end_col, end_col)
        for _ in self.indents[1:]:
            self.add("dedent", None, last, end_col, end_col)
        self.add("eof", None, last, end_col, end_col)

    def unclosed(self) -> None:
        """Report the innermost open bracket and forget all of them (recovery)."""
        opener = self.brackets[-1]
        closer = ")" if opener.kind == "(" else "]"
        self.error(f"'{opener.kind}' was never closed (expected '{closer}')",
                   opener.line, opener.col)
        self.brackets.clear()
        if self.tokens and self.tokens[-1].kind != "newline":
            last = self.tokens[-1]
            self.add("newline", "forced", last.line, last.end_col, last.end_col)

    def line(self, number: int, text: str) -> None:
        stripped = text.lstrip(" \t")
        if not stripped or stripped[0] == "#":
            return  # blank and comment-only lines never matter, not even inside brackets
        start = len(text) - len(stripped)
        if self.brackets:
            first = _MASTER.match(text, start)
            word = first.group() if first and first.lastgroup in ("name", "op") else ""
            if word in STATEMENT_KEYWORDS:
                self.unclosed()
        if not self.brackets:
            self.indentation(number, text, start)
        self.scan(number, text, start)
        if not self.brackets:
            self.add("newline", None, number, len(text) + 1, len(text) + 1)

    def indentation(self, number: int, text: str, width: int) -> None:
        """Emit INDENT/DEDENT tokens for a logical line whose first token is at index
        `width`."""
        level = width
        tab = text.find("\t", 0, width)
        if tab >= 0:
            # Reported once per file (an editor setting, not many mistakes); the layout goes on
            # with tab stops every 8 columns so the rest of the file still parses sensibly.
            if not self.tab_reported:
                self.error("tab in indentation (indent with spaces)", number, tab + 1)
                self.tab_reported = True
            level = len(text[:width].expandtabs(8))
        col = width + 1
        if level > self.indents[-1]:
            self.indents.append(level)
            self.add("indent", None, number, col, col)
            return
        while level < self.indents[-1]:
            self.indents.pop()
            self.add("dedent", None, number, col, col)
        if level != self.indents[-1]:
            self.error("unindent does not match any outer indentation level", number, col)
            self.indents.append(level)
            self.add("indent", "bad", number, col, col)

    def scan(self, number: int, text: str, pos: int, in_braces: bool = False) -> int:
        """Lex `text` from `pos` to the end of the line; inside an f-string's braces, up to
        the first `}` outside a string, whose index is returned (else the line's end)."""
        match = _MASTER.match
        append = self.tokens.append
        file = self.file
        end = len(text)
        while pos < end:
            m = match(text, pos)
            if m is None:
                if in_braces and text[pos:].lstrip(" \t")[:1] == "}":
                    return text.index("}", pos)
                pos = self.bad_chars(number, text, pos, in_braces)
                continue
            kind = cast(str, m.lastgroup)  # every alternative of _MASTER is a named group
            stop = m.end()
            pos = m.start(kind)
            if kind == "name":
                word = m.group(kind)
                keyword = _WORD_KINDS.get(word)
                append(Token(keyword or "name", keyword or word, file, number, pos + 1,
                             stop + 1))
            elif kind == "op":
                op = m.group(kind)
                append(Token(op, op, file, number, pos + 1, stop + 1))
                if op in "([":
                    self.brackets.append(self.tokens[-1])
                elif op in ")]":
                    self.close(op)
            elif kind == "number":
                self.number(m.group(kind), number, pos)
            elif kind == "str":
                self.add("str", m.group(kind)[1:-1], number, pos + 1, stop + 1)
            elif kind == "strslow":
                stop = self.string(number, text, pos)
            elif kind == "fstr":
                stop = scan_fstring(self, number, text, pos)
            elif kind == "comment" or kind == "end":
                break
            pos = stop
        return end

    def close(self, closer: str) -> None:
        """Pop the brackets up to the matching opener (a mismatched one is the parser's to
        report); a closer with no opener at all is left to the parser too."""
        opener = "(" if closer == ")" else "["
        for i in range(len(self.brackets) - 1, -1, -1):
            if self.brackets[i].kind == opener:
                del self.brackets[i:]
                return

    def bad_chars(self, number: int, text: str, pos: int, in_braces: bool = False) -> int:
        """Report a run of characters that start no token once; returns the index after it."""
        while text[pos] in " \t":
            pos += 1  # the master pattern skips blanks before a token; the bad one is after them
        char = text[pos]
        shown = char if char.isprintable() else f"U+{ord(char):04X}"
        end = pos + 1
        while end < len(text) and _MASTER.match(text, end) is None and not (
                in_braces and text[end] == "}"):
            end += 1
        self.error(f"unexpected character '{shown}'{_HINTS.get(char, '')}", number, pos + 1)
        return end

    def number(self, text: str, number: int, pos: int) -> None:
        col, end_col = pos + 1, pos + 1 + len(text)
        if _INT.match(text):
            value = int(text.replace("_", ""))
            self.add("int", value, number, col, end_col)  # range is checked by the parser
        elif _FLOAT.match(text):
            self.add("float", float(text.replace("_", "")), number, col, end_col)
        else:
            self.error(f"invalid number literal '{text}'", number, col, end_col)
            self.add("int", 0, number, col, end_col)

    def string(self, number: int, text: str, pos: int) -> int:
        """Decode the string literal opening at `pos`, with escapes; returns the end index."""
        quote = text[pos]
        chars: list[str] = []
        i = pos + 1
        end = len(text)
        while i < end:
            c = text[i]
            if c == quote:
                self.add("str", "".join(chars), number, pos + 1, i + 2)
                return i + 1
            if c != "\\":
                chars.append(c)
                i += 1
                continue
            decoded, i = self.escape(number, text, i)
            chars.append(decoded)
        self.error("unclosed string literal (strings end on the line they start)",
                   number, pos + 1, end + 1)
        self.brackets.clear()  # the string probably swallowed their closers
        self.add("str", "".join(chars), number, pos + 1, end + 1)
        return end

    def escape(self, number: int, text: str, i: int) -> tuple[str, int]:
        """Decode the escape at text[i] == '\\'; returns (text, next index)."""
        if i + 1 >= len(text):
            return "", i + 1  # a backslash ending the line: reported as an unclosed string
        c = text[i + 1]
        if c in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[c], i + 2
        if c != "u":
            shown = c if c.isprintable() else f"U+{ord(c):04X}"
            self.error(f"invalid escape sequence '\\{shown}' (valid: \\n \\r \\t \\0 \\\" \\' "
                       f"\\\\ \\u{{...}})", number, i + 1, i + 3)
            return c, i + 2
        m = _UNICODE_ESCAPE.match(text, i + 2)
        if m is None:
            self.error("invalid \\u escape: expected \\u{...} with 1 to 6 hex digits",
                       number, i + 1, i + 3)
            return "", i + 2
        code = int(m.group(1), 16)
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            self.error(f"invalid \\u escape: U+{code:X} is not a Unicode scalar value",
                       number, i + 1, m.end() + 1)
            return "\ufffd", m.end()
        return chr(code), m.end()
