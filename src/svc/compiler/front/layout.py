"""The canonical layout of a `.svc` file (`svcc fmt`, and an editor's "format document").

One layout and no options, as gofmt has it, so nobody argues about layout and a diff shows
only what changed. It re-emits the lexer's own tokens with canonical spacing rather than
re-printing the syntax tree: every syntax the parser accepts is laid out the day it is added,
and the formatter can never drop or reorder anything, because it prints each token's own
source text. The rules:

- indentation is 4 spaces per block level. A line continued inside brackets lines up with
  the first item after the opening bracket when that item is on the bracket's line (PEP 8's
  "aligned with the opening delimiter"); when the bracket ends its line, the items are one
  level deeper than that line (a hanging indent), and a line that starts with the closing
  bracket lines up with the line that opened it;
- one space around binary operators, `=`, `->`, after `,` and after a `:` that is followed by
  more on its line (`x: i64`, `case None: return 0`); none inside brackets, before `,` `:`
  `)` `]` `?`, around `.`, after a unary `-` or `@`, before the `(` of a call or the `[` of an
  index or type arguments, around the `=` of a named argument, around a slice's `:`;
- the user's line breaks are kept (inside brackets, too), as are blank lines, at most one in
  a row, none at the start or end of the file or at the start of a block;
- every comment stays where it is: an own-line comment is indented like the code it sits
  among, an end-of-line comment follows its line's code after two spaces; its text is kept,
  trailing blanks removed;
- no trailing blanks; the file ends with exactly one newline.

Only a file that parses is laid out (a syntax error gives the front end's diagnostics and no
text), and the result must parse again and give the same tokens and comments: a layout
that would change the program is a bug of ours and raises, never a silent rewrite.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from svc.compiler.diagnostics import Diagnostic
from svc.compiler.front.lexer import Token, tokenize
from svc.compiler.front.parser import parse
from svc.compiler.source import SourceFile

INDENT = "    "
_OPENERS = {"(": ")", "[": "]"}
_CLOSERS = frozenset(_OPENERS.values())
_STRUCTURE = frozenset({"newline", "indent", "dedent", "eof"})
#: Tokens that end an operand: a `(` or `[` right after one is a call, an index or type
#: arguments (no space), and a `-` right after one is binary (spaced).
_OPERAND_END = frozenset({"name", "int", "float", "str", "fstr", "True", "False", "None",
                          ")", "]", "?"})
#: Tokens with no space after them.
_NO_SPACE_AFTER = frozenset({"(", "[", ".", "@"})
#: Tokens with no space before them.
_NO_SPACE_BEFORE = frozenset({")", "]", ",", ".", ":", "?"})


class LayoutChangedProgram(AssertionError):
    """The laid-out text lexes to other tokens or comments than the original: a bug here."""


def format_source(source: SourceFile) -> tuple[str | None, list[Diagnostic]]:
    """The canonical text of `source`, or None and its lexical and syntax diagnostics."""
    _, diagnostics = parse(source)
    if diagnostics:
        return None, diagnostics
    tokens, _ = tokenize(source)
    text = _Layout(source.lines, tokens).run()
    _check_same_program(source, tokens, text)
    return text, []


def format_text(path: str, text: str) -> tuple[str | None, list[Diagnostic]]:
    """`format_source` on a text (an editor's document) named `path` in diagnostics."""
    return format_source(SourceFile(path, text[1:] if text.startswith("\ufeff") else text))


# --- the layout -------------------------------------------------------------------------------

@dataclass
class _Line:
    """One logical line: its block level and tokens (spanning physical lines in brackets)."""

    level: int
    tokens: list[Token] = field(default_factory=list)


@dataclass
class _Open:
    """An open bracket: its kind, the indentation of the line it was opened on (its closing
    bracket's, on a line of its own) and that of the lines continued inside it."""

    kind: str
    indent: str
    inner: str


class _Layout:
    """Lays out one file's logical lines, and the blank and comment-only lines around and
    inside them (which the lexer skips), into `out`, one output line per entry."""

    def __init__(self, lines: list[str], tokens: list[Token]):
        self.lines = lines
        self.logical = _logical_lines(tokens)
        self.out: list[str] = []
        self.blank_pending = False
        self.done = 0  # the last physical line (1-based) already laid out
        self.columns: list[int] = [0]  # by block level: the original column of its code
        self.line_ends: dict[int, int] = {}  # physical line: the end column of its last token
        for line in self.logical:
            for token in line.tokens:
                self.line_ends[token.line] = max(self.line_ends.get(token.line, 1),
                                                 token.end_col)

    def run(self) -> str:
        previous: _Line | None = None
        for line in self.logical:
            first = line.tokens[0]
            self.between(previous, line, first.line)
            del self.columns[line.level:]
            self.columns.append(first.col - 1)
            self.code(line)
            previous = line
        self.between(previous, None, len(self.lines) + 1)
        return "\n".join(self.out) + "\n" if self.out else ""

    def emit(self, text: str) -> None:
        if self.blank_pending and self.out:
            self.out.append("")
        self.blank_pending = False
        self.out.append(text.rstrip())

    def between(self, previous: _Line | None, following: _Line | None, stop: int) -> None:
        """The blank and comment-only lines before physical line `stop`, between two logical
        lines (`following` None: the end of the file)."""
        opens_block = previous is not None and previous.tokens[-1].kind == ":" and (
            following is not None and following.level > previous.level)
        for number in range(self.done + 1, stop):
            text = self.lines[number - 1].strip()
            if not text:
                self.blank_pending = self.blank_pending or not opens_block
                continue
            level = self.comment_level(len(self.lines[number - 1]) - len(
                self.lines[number - 1].lstrip(" \t")), previous, following)
            self.emit(INDENT * level + text)
            opens_block = False
        if following is None:
            self.blank_pending = False
        self.done = max(self.done, stop - 1)

    def comment_level(self, column: int, previous: _Line | None,
                      following: _Line | None) -> int:
        """The block level of an own-line comment at `column`: the deepest level open at the
        previous line whose code starts at or left of it, but not above the next line's."""
        lowest = following.level if following else 0
        highest = max(lowest, previous.level if previous else 0)
        for level in range(highest, lowest, -1):
            if level < len(self.columns) and self.columns[level] <= column:
                return level
        return lowest

    def code(self, line: _Line) -> None:
        """One logical line, with the comments and blank lines inside its brackets."""
        indent = INDENT * line.level
        text = indent
        opened: list[_Open] = []
        previous: Token | None = None
        unary = False  # whether `previous` is a unary minus
        for index, token in enumerate(line.tokens):
            if previous is not None and token.line != previous.line:
                self.emit(text + self.end_comment(previous.line))
                self.inner_lines(previous.line + 1, token.line, opened)
                closing = token.kind in _CLOSERS
                indent = opened[-1].indent if closing else opened[-1].inner
                text = indent
            elif previous is not None:
                text += _space(previous, token, opened, unary)
            unary = token.kind == "-" and (previous is None or previous.kind not in _OPERAND_END)
            text += self.source_text(token)
            if token.kind in _OPENERS:
                following = line.tokens[index + 1] if index + 1 < len(line.tokens) else None
                hanging = following is None or following.line != token.line
                inner = indent + INDENT if hanging else " " * len(text)
                opened.append(_Open(token.kind, indent, inner))
            elif token.kind in _CLOSERS and opened:
                opened.pop()
            previous = token
        assert previous is not None
        self.emit(text + self.end_comment(previous.line))
        self.done = previous.line

    def inner_lines(self, start: int, stop: int, opened: list[_Open]) -> None:
        """Blank and comment-only lines inside brackets: comments at the brackets' indent."""
        for number in range(start, stop):
            text = self.lines[number - 1].strip()
            if text:
                self.emit(opened[-1].inner + text)
            else:
                self.blank_pending = True

    def end_comment(self, number: int) -> str:
        """The comment ending physical line `number` after its last token, as `  # ...`."""
        rest = self.lines[number - 1][self.line_ends[number] - 1:].strip()
        return "  " + rest if rest else ""

    def source_text(self, token: Token) -> str:
        """A token exactly as written (a string keeps its quotes and escapes)."""
        return self.lines[token.line - 1][token.col - 1:token.end_col - 1]


def _logical_lines(tokens: list[Token]) -> list[_Line]:
    """The tokens grouped by logical line, each with its block level."""
    lines: list[_Line] = []
    level = 0
    current: _Line | None = None
    for token in tokens:
        if token.kind == "indent":
            level += 1
        elif token.kind == "dedent":
            level -= 1
        elif token.kind in ("newline", "eof"):
            current = None
        else:
            if current is None:
                current = _Line(level)
                lines.append(current)
            current.tokens.append(token)
    return lines


def _space(before: Token, token: Token, opened: list[_Open], after_unary: bool) -> str:
    """The space between two tokens on one line: "" or " "."""
    kind, inner = token.kind, opened[-1].kind if opened else None
    if before.kind in _NO_SPACE_AFTER or kind in _NO_SPACE_BEFORE or after_unary:
        return ""
    if (kind == "=" or before.kind == "=") and inner == "(":
        return ""  # a named argument f(x=1)
    if kind in _OPENERS:
        return "" if before.kind in _OPERAND_END else " "
    if before.kind == ":" and inner == "[":
        return ""  # a slice s[a:b]
    return " "


# --- the safety net ---------------------------------------------------------------------------

def _check_same_program(source: SourceFile, before: list[Token], text: str) -> None:
    """Raise LayoutChangedProgram unless `text` parses and has the tokens and comments of
    `source` (spacing matters to the parser in one place: `-9223372036854775808`)."""
    laid_out = SourceFile(source.path, text)
    if parse(laid_out)[1]:
        raise LayoutChangedProgram(f"the layout of {source.path} would not parse")
    after = tokenize(laid_out)[0]
    if _signature(before) != _signature(after):
        raise LayoutChangedProgram(f"the layout of {source.path} would change its tokens")
    if _comments(source, before) != _comments(laid_out, after):
        raise LayoutChangedProgram(f"the layout of {source.path} would change its comments")


def _signature(tokens: list[Token]) -> list[object]:
    """The tokens minus their places: kinds and values (an f-string's parts, recursively)."""
    return [(t.kind, _value(t.value)) for t in tokens]


def _value(value: object) -> object:
    if isinstance(value, list):
        return [_signature(part) if isinstance(part, list) else part for part in value]
    return value


def _comments(source: SourceFile, tokens: list[Token]) -> list[str]:
    """Every comment's text, in order (found after the last token of each line)."""
    ends: dict[int, int] = {}
    for token in tokens:
        if token.kind not in _STRUCTURE:
            ends[token.line] = max(ends.get(token.line, 1), token.end_col)
    found = []
    for number, line in enumerate(source.lines, 1):
        rest = line[ends.get(number, 1) - 1:].strip()
        if rest:
            found.append(rest)
    return found
