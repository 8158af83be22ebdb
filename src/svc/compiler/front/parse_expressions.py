"""Types and expressions: the part of the parser that recurses, by precedence climbing.

Precedence follows docs/reference/language.md, lowest first: `or`, `and`, `not`, comparisons
(not chained), `+ -`, `* / %`, unary `-`, `await`/`try`, postfix `.f` `[i]` calls. Nesting and
operator counts are capped (MAX_DEPTH, MAX_OPERATORS) so absurd input is an error, not a crash
of this recursive parser or of the passes after it.
"""

from __future__ import annotations

from typing import cast

from svc.compiler.front import syntax
from svc.compiler.front.lexer import Token
from svc.compiler.front.parse_cursor import ParseError, TokenCursor
from svc.rules.contract import I64_MAX

COMPARISONS = frozenset(("==", "!=", "<", ">", "<=", ">="))
#: Binary operators in one outermost expression. A chain `a + b + ...` is parsed in a loop
#: but is a left-deep tree to the later passes, which recurse over it: 1,000 keeps the code
#: generator and Python's own compiler well inside RECURSION_LIMIT (they fail near 2,500).
MAX_OPERATORS = 1000
NOT_PREC = 3
COMPARISON_PREC = 4
BINARY_PREC = {"or": 1, "and": 2, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6,
               **{op: COMPARISON_PREC for op in COMPARISONS}}
#: Tokens that can start an expression (used to tell `return` from `return e`).
EXPR_START = frozenset(("name", "int", "float", "str", "fstr", "(", "[", "-", "not", "await", "try",
                        "True", "False", "None"))


class ExpressionParser(TokenCursor):
    """Parses type annotations and expressions; the statement parser builds on it."""

    # --- types --------------------------------------------------------------------------------

    def type_expr(self) -> syntax.TypeExpr:
        self.nest()
        try:
            return self.type_expr_body()
        finally:
            self.depth -= 1

    def type_expr_body(self) -> syntax.TypeExpr:
        start = self.tok
        if self.accept("["):
            inner = self.type_expr()
            self.expect("]", "']' after the list element type")
            node: syntax.TypeExpr = syntax.NamedType(self.span_from(start), "List", [inner])
        elif self.at("name") or self.at("None"):
            name = self.advance()
            args: list[syntax.TypeExpr] = []
            if self.accept("["):
                while True:
                    args.append(self.type_expr())
                    if not self.accept(",") or self.at("]"):
                        break
                self.expect("]", "',' or ']' in the type arguments")
            node = syntax.NamedType(self.span_from(start), str(name.value), args)
        elif self.at("(") and self.peek().kind == ")":
            self.advance()
            self.advance()
            node = syntax.NamedType(self.span_from(start), "unit")
        else:
            raise self.fail(f"expected a type, found {self.tok.describe()}")
        while self.accept("?"):
            node = syntax.OptionalType(self.span_from(start), node)
        return node

    # --- expressions --------------------------------------------------------------------------

    def expr(self, min_prec: int = 1) -> syntax.Expr:
        """Precedence climbing over the binary operators (all left-associative) and `not`."""
        if self.depth == 0:
            self.operators = 0
        self.nest()
        try:
            return self.climb(min_prec)
        finally:
            self.depth -= 1

    def climb(self, min_prec: int) -> syntax.Expr:
        if self.tok.kind == "not" and min_prec <= NOT_PREC:
            start = self.advance()
            operand = self.expr(NOT_PREC)
            left: syntax.Expr = syntax.Unary(self.span_from(start), "not", operand)
        else:
            left = self.unary()
        while True:
            op = self.tok.kind
            prec = BINARY_PREC.get(op)
            if prec is None or prec < min_prec:
                return left
            self.operators += 1
            if self.operators > MAX_OPERATORS:
                raise self.fail(f"expression too long (more than {MAX_OPERATORS} operators); "
                                "split it into several statements")
            self.advance()
            right = self.expr(prec + 1)
            left = syntax.Binary(left.span.to(right.span), op, left, right)
            if prec == COMPARISON_PREC and self.tok.kind in COMPARISONS:
                raise self.fail("comparisons cannot be chained; combine them with 'and'")

    def unary(self) -> syntax.Expr:
        if not self.at("-"):
            return self.prefix()
        start = self.advance()
        self.nest()
        try:
            operand = self.unary()
        finally:
            self.depth -= 1
        span = self.span_from(start)
        if isinstance(operand, syntax.IntLit):
            # `-` on an integer literal is folded, so -9223372036854775808 is an i64.
            if operand.value == -(I64_MAX + 1):
                self.report(f"integer literal {I64_MAX + 1} does not fit in i64", span)
            return syntax.IntLit(span, -operand.value)
        if isinstance(operand, syntax.FloatLit):
            return syntax.FloatLit(span, -operand.value)
        return syntax.Unary(span, "-", operand)

    def prefix(self) -> syntax.Expr:
        kind = self.tok.kind
        if kind != "await" and kind != "try":
            return self.postfix()
        start = self.advance()
        self.nest()
        try:
            operand = self.prefix()
        finally:
            self.depth -= 1
        node = syntax.Await if kind == "await" else syntax.Try
        return node(self.span_from(start), operand)

    def postfix(self) -> syntax.Expr:
        node = self.atom()
        while True:
            kind = self.tok.kind
            if kind == ".":
                self.advance()
                attr = self.expect("name", "a field name after '.'")
                node = syntax.Attribute(self.span_from(node.span), node, attr.text)
            elif kind == "(":
                node = self.call(node, [])
            elif kind == "[":
                type_args = self.try_type_args()
                if type_args is not None:
                    node = self.call(node, type_args)
                else:
                    node = self.index(node)
            else:
                return node

    def try_type_args(self) -> list[syntax.TypeExpr] | None:
        """`[T, ...]` immediately followed by `(`: the type arguments of a generic call.
        Anything else (`xs[i]`) is left for indexing; nothing is consumed then."""
        save = self.pos
        self.speculating += 1
        try:
            self.advance()
            args = [self.type_expr()]
            while self.accept(","):
                args.append(self.type_expr())
            if self.accept("]") and self.at("("):
                return args
        except ParseError:
            pass
        finally:
            self.speculating -= 1
        self.pos = save
        self.tok = self.tokens[save]
        self.prev = self.tokens[save - 1]
        return None

    def index(self, value: syntax.Expr) -> syntax.Expr:
        self.advance()
        if self.at("]"):
            raise self.fail("expected an index inside '[]'")
        if self.at(":"):
            return self.slice(value, None)
        index = self.expr()
        if self.at(":"):
            return self.slice(value, index)
        if self.at(","):
            raise self.fail("an index is a single expression")
        self.expect("]", "']' after the index")
        return syntax.Index(self.span_from(value.span), value, index)

    def slice(self, value: syntax.Expr, start: syntax.Expr | None) -> syntax.Slice:
        """`value[start:end]` from the ':' on; either bound may be left out, no step."""
        self.advance()  # ':'
        end = None if self.at("]") else self.expr()
        if self.at(":"):
            raise self.fail("a slice has no step: write value[start:end]")
        self.expect("]", "']' after the slice")
        return syntax.Slice(self.span_from(value.span), value, start, end)

    def call(self, func: syntax.Expr, type_args: list[syntax.TypeExpr]) -> syntax.Call:
        opener = self.advance()  # '('
        args: list[syntax.Expr] = []
        keywords: list[syntax.Keyword] = []
        while not self.at(")"):
            if self.at("name") and self.peek().kind == "=":
                name = self.advance()
                self.advance()
                value = self.expr()
                keywords.append(syntax.Keyword(self.span_from(name), str(name.value), value))
            else:
                arg = self.expr()
                if keywords:
                    raise self.fail("a positional argument cannot follow a keyword argument",
                                    arg.span)
                args.append(arg)
            if not self.accept(","):
                break
        self.close(opener, "',' or ')' in the argument list")
        return syntax.Call(self.span_from(func.span), func, args, keywords, type_args)

    def close(self, opener: Token, what: str) -> None:
        """Expect the bracket closing `opener`; when it is missing on a later line, say which
        bracket is open (the usual cause of an error far from the typo)."""
        closer = ")" if opener.kind == "(" else "]"
        if self.accept(closer):
            return
        where = f" to close the '{opener.kind}' on line {opener.line}" \
            if self.tok.line != opener.line else ""
        raise self.fail(f"expected {what}{where}, found {self.tok.describe()}")

    def atom(self) -> syntax.Expr:
        tok = self.tok
        kind = tok.kind
        if kind == "name":
            self.advance()
            return syntax.Name(tok.span, str(tok.value))
        if kind == "int":
            self.advance()
            value = cast(int, tok.value)  # the lexer decodes a number token's value
            if value > I64_MAX and not (value == I64_MAX + 1 and self.negated()):
                self.report(f"integer literal {value} does not fit in i64", tok.span)
            return syntax.IntLit(tok.span, value)
        if kind == "str":
            self.advance()
            return syntax.StrLit(tok.span, str(tok.value))
        if kind == "float":
            self.advance()
            return syntax.FloatLit(tok.span, cast(float, tok.value))
        if kind == "fstr":
            self.advance()
            parts = cast(list, tok.value)  # text, and each `{expr}`'s tokens (lex_fstring.py)
            return syntax.FString(tok.span, [p if isinstance(p, str) else self.embedded(p)
                                             for p in parts])
        if kind in ("True", "False"):
            self.advance()
            return syntax.BoolLit(tok.span, kind == "True")
        if kind == "None":
            self.advance()
            return syntax.NoneLit(tok.span)
        if kind == "(":
            return self.parenthesized()
        if kind == "[":
            return self.list_literal()
        raise self.fail(f"expected an expression, found {tok.describe()}")

    def embedded(self, tokens: list[Token]) -> syntax.Expr:
        """The expression between an f-string's braces, parsed from its own tokens (they
        end with the `}`), then back to the tokens of the line."""
        saved = self.tokens, self.pos, self.tok, self.prev
        self.tokens, self.pos, self.tok = tokens, 0, tokens[0]
        try:
            node = self.expr()
            if not self.at("}"):
                raise self.fail(f"expected '}}' after the expression in the f-string, found "
                                f"{self.tok.describe()}")
            return node
        finally:
            self.tokens, self.pos, self.tok, self.prev = saved

    def negated(self) -> bool:
        """Is the literal just consumed the direct operand of a unary minus written right
        before it (`-9223372036854775808`, not `- 9223372036854775808`)?"""
        if self.pos < 2:
            return False
        minus, literal = self.tokens[self.pos - 2], self.tokens[self.pos - 1]
        return (minus.kind == "-"
                and (minus.span.end_line, minus.span.end_col) == (literal.span.line, literal.span.col)
                and (self.pos < 3 or self.tokens[self.pos - 3].kind not in _VALUE_END))

    def parenthesized(self) -> syntax.Expr:
        start = self.advance()
        if self.accept(")"):
            return syntax.UnitLit(self.span_from(start))
        inner = self.expr()
        if self.at(","):
            raise self.fail("tuples are not supported")
        self.close(start, "')'")
        return inner

    def list_literal(self) -> syntax.ListLit:
        start = self.advance()
        elements: list[syntax.Expr] = []
        while not self.at("]"):
            elements.append(self.expr())
            if not self.accept(","):
                break
        self.close(start, "',' or ']' in the list")
        return syntax.ListLit(self.span_from(start), elements)


#: Token kinds that end an operand: a `-` after one of these is binary, not unary.
_VALUE_END = frozenset(("name", "int", "float", "str", "fstr", ")", "]", "True", "False", "None"))
