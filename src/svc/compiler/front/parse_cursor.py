"""The parser's cursor over the token list: position, lookahead, error recording, recovery.

Errors never raise out of the parser: `fail` records a syntax error and returns a `ParseError`
that unwinds to the nearest statement boundary, where `synchronize` skips the rest of the
logical line (and any indented block hanging from it), so one typo gives one message and
independent errors are all reported. Errors on a line that already has a lexical error are not
reported again. The nesting counters live here too, because types, expressions and blocks all
recurse and must all stop at the same limits.
"""

from __future__ import annotations

from svc.compiler.diagnostics import Diagnostic
from svc.compiler.front.lexer import Token
from svc.compiler.source import Span

MAX_DEPTH = 200


class ParseError(Exception):
    """Unwinds to the nearest statement boundary; the diagnostic is already recorded."""


class TokenCursor:
    """A position in the token list and the diagnostics recorded so far."""

    def __init__(self, file: str, tokens: list[Token], quiet_lines: set[int]):
        self.file = file
        self.tokens = tokens
        self.pos = 0
        self.tok = tokens[0]
        self.prev = tokens[0]
        self.diagnostics: list[Diagnostic] = []
        self.quiet_lines = quiet_lines
        self.speculating = 0
        self.depth = 0  # expression nesting
        self.operators = 0  # binary operators in the current outermost expression
        self.blocks = 0  # block nesting

    def advance(self) -> Token:
        tok = self.tok
        self.prev = tok
        if self.pos < len(self.tokens) - 1:
            self.pos += 1
            self.tok = self.tokens[self.pos]
        return tok

    def at(self, kind: str) -> bool:
        return self.tok.kind == kind

    def peek(self, offset: int = 1) -> Token:
        return self.tokens[min(self.pos + offset, len(self.tokens) - 1)]

    def accept(self, kind: str) -> Token | None:
        if self.tok.kind == kind:
            return self.advance()
        return None

    def expect(self, kind: str, what: str | None = None) -> Token:
        if self.tok.kind == kind:
            return self.advance()
        raise self.fail(f"expected {what or repr(kind)}, found {self.tok.describe()}")

    def fail(self, message: str, span: Span | None = None) -> ParseError:
        """Record a syntax error (unless it is a follow-on error) and return the exception."""
        if not self.speculating:
            span = span or self.tok.span
            if self.inside_unclosed_bracket():
                pass  # the lexer already reported the unclosed bracket that caused this
            elif span.line not in self.quiet_lines:
                self.diagnostics.append(Diagnostic(message, span))
                self.quiet_lines.add(span.line)
        return ParseError(message)

    def inside_unclosed_bracket(self) -> bool:
        """Is the current token inside a bracket that the lexer found never closed? The
        lexer emits no NEWLINE inside brackets, so the next one tells: it is "forced"."""
        for i in range(self.pos, len(self.tokens)):
            if self.tokens[i].kind in ("newline", "eof"):
                return self.tokens[i].value == "forced"
        return False

    def report(self, message: str, span: Span) -> None:
        """Record an error that needs no recovery (the parse goes on normally)."""
        if not self.speculating and span.line not in self.quiet_lines:
            self.diagnostics.append(Diagnostic(message, span))
            self.quiet_lines.add(span.line)

    def span_from(self, start: Token | Span) -> Span:
        end = self.prev
        return Span(self.file, start.line, start.col, end.line, end.end_col)

    def synchronize(self) -> None:
        """Skip to the next statement boundary: past the end of this logical line and any
        indented block hanging from it; stop before a DEDENT or at EOF."""
        while self.tok.kind not in ("newline", "dedent", "eof"):
            if self.tok.kind == "indent":
                self.skip_block()
            else:
                self.advance()
        if self.accept("newline") and self.at("indent"):
            self.skip_block()

    def skip_block(self) -> None:
        """Skip a balanced INDENT ... DEDENT run."""
        depth = 0
        while not self.at("eof"):
            kind = self.advance().kind
            if kind == "indent":
                depth += 1
            elif kind == "dedent":
                depth -= 1
                if depth == 0:
                    return
    def nest(self) -> None:
        """Count one level of nesting; absurdly deep input is an error, not a crash of this
        recursive parser (or of the passes after it)."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"expression nested too deeply (more than {MAX_DEPTH} levels)")
