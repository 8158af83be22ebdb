"""The parser: tokens to a `syntax.Module`, by recursive descent and precedence climbing.

Precedence follows LANGUAGE.md §5, lowest first: `or`, `and`, `not`, comparisons (not
chained), `+ -`, `* / %`, unary `-`, `await`/`try`, postfix `.f` `[i]` calls.

Errors never raise out of `parse`: a syntax error is recorded and the parser skips to the next
statement boundary (the end of the logical line, plus any indented block hanging from it), so
one typo gives one message and independent errors are all reported. Errors on a line that
already has a lexical error are not reported again.
"""

from __future__ import annotations

import sys

from svc.compiler import syntax as ast
from svc.compiler.diagnostics import Diagnostic
from svc.compiler.lexer import I64_MAX, KEYWORDS, Token, tokenize
from svc.compiler.source import SourceFile, Span

ROUTE_METHODS = {"get": "GET", "post": "POST", "put": "PUT", "delete": "DELETE"}
COMPARISONS = frozenset(("==", "!=", "<", ">", "<=", ">="))
MAX_DEPTH = 200
#: Binary operators in one outermost expression. A chain `a + b + ...` is parsed in a loop
#: but is a left-deep tree to the later passes, which recurse over it: 1,000 keeps the code
#: generator and Python's own compiler well inside RECURSION_LIMIT (they fail near 2,500).
MAX_OPERATORS = 1000
MAX_BLOCKS = 100
RECURSION_LIMIT = 10_000
NOT_PREC = 3
COMPARISON_PREC = 4
BINARY_PREC = {"or": 1, "and": 2, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6,
               **{op: COMPARISON_PREC for op in COMPARISONS}}
AUGMENTED = {"+=": "+", "-=": "-", "*=": "*"}
PATTERNS = ("Ok", "Err", "Some")
#: Tokens that can start an expression (used to tell `return` from `return e`).
EXPR_START = frozenset(("name", "int", "float", "str", "(", "[", "-", "not", "await", "try",
                        "True", "False", "None"))


class ParseError(Exception):
    """Unwinds to the nearest statement boundary; the diagnostic is already recorded."""


def parse(source: SourceFile) -> tuple[ast.Module, list[Diagnostic]]:
    """Parse one file. Lexical and syntax diagnostics are returned together."""
    # Nesting is capped at MAX_DEPTH levels, a few frames each: make sure Python allows that
    # (and the later passes, which recurse over the same tree).
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    tokens, lex_diagnostics = tokenize(source)
    parser = Parser(source.path, tokens, {d.span.line for d in lex_diagnostics})
    module = parser.module()
    return module, lex_diagnostics + parser.diagnostics


class Parser:
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

    # --- token helpers ------------------------------------------------------------------------

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

    # --- declarations -------------------------------------------------------------------------

    def module(self) -> ast.Module:
        items: list[ast.Decl] = []
        while not self.at("eof"):
            start = self.pos
            try:
                item = self.declaration()
                if item is not None:
                    items.append(item)
            except ParseError:
                self.synchronize()
            if self.pos == start:
                self.advance()  # never loop without progress
        return ast.Module(self.file, items)

    def declaration(self) -> ast.Decl | None:
        kind = self.tok.kind
        if kind == "import":
            return self.import_all()
        if kind == "from":
            return self.import_names()
        if kind == "class":
            return self.class_def()
        if kind == "@":
            return self.routed_function()
        if kind in ("def", "async"):
            return self.function()
        if kind == "indent":
            raise self.fail("unexpected indentation")
        if kind == "dedent":
            self.advance()
            return None
        raise self.fail("expected a declaration at top level (import, class, def or async "
                        f"def), found {self.tok.describe()}")

    def end_of_line(self) -> None:
        if not self.accept("newline") and not self.at("eof"):
            raise self.fail(f"expected end of line, found {self.tok.describe()}")

    def import_all(self) -> ast.Import:
        start = self.advance()
        path = self.expect("str", "a file name in quotes after 'import'")
        self.end_of_line()
        return ast.Import(Span(self.file, start.line, start.col, path.line, path.end_col),
                          path.value)

    def import_names(self) -> ast.Import:
        start = self.advance()
        path = self.expect("str", "a file name in quotes after 'from'")
        self.expect("import", "'import' after the file name")
        names, spans = [], []
        while True:
            name = self.expect("name", "a name to import")
            names.append(name.value)
            spans.append(name.span)
            if not self.accept(","):
                break
            if self.at("newline"):
                break
        node = ast.Import(self.span_from(start), path.value, names, spans)
        self.end_of_line()
        return node

    def class_def(self) -> ast.ClassDef:
        start = self.advance()
        name = self.expect("name", "a class name")
        if self.at("("):
            raise self.fail("classes have no base classes: write 'class Name:'")
        self.expect(":", "':' after the class name")
        fields: list[ast.Field] = []
        span = Span(self.file, start.line, start.col, name.line, name.end_col)
        if self.accept("newline"):
            if not self.accept("indent"):
                self.report("expected an indented block of fields 'name: Type'", self.tok.span)
                return ast.ClassDef(span, name.value, name.span, fields)
            while not self.at("dedent") and not self.at("eof"):
                try:
                    fields.append(self.field())
                except ParseError:
                    self.synchronize()
            self.accept("dedent")
        else:
            fields.append(self.field())
        return ast.ClassDef(span, name.value, name.span, fields)

    def field(self) -> ast.Field:
        if self.tok.kind in ("def", "async", "@"):
            raise self.fail("a class has only fields 'name: Type'; define functions at "
                            "top level")
        if self.at("indent"):
            raise self.fail("unexpected indentation")
        if self.at("pass"):
            raise self.fail("a class needs fields 'name: Type', not 'pass'")
        name = self.expect("name", "a field 'name: Type'")
        self.expect(":", f"':' and a type after field '{name.value}'")
        annotation = self.type_expr()
        if self.at("="):
            raise self.fail("class fields have no default values")
        self.end_of_line()
        return ast.Field(self.span_from(name), name.value, annotation)

    def routed_function(self) -> ast.FunctionDef:
        routes: list[ast.RouteAttr] = []
        attrs: list[Token] = []
        while self.at("@"):
            attrs.append(self.tok)
            routes.append(self.route_attr())
            self.end_of_line()
        if self.at("def") or self.at("class"):
            # Not a handler: report once, at the attribute, and keep the declaration.
            self.report(f"a route attribute must be directly above an 'async def', not a "
                        f"'{self.tok.kind}'", attrs[0].span)
            return self.class_def() if self.at("class") else self.function()
        if not self.at("async"):
            raise self.fail(f"expected 'async def' after the route attribute, found "
                            f"{self.tok.describe()}")
        function = self.function()
        function.routes = routes
        return function

    def route_attr(self) -> ast.RouteAttr:
        start = self.advance()
        name = self.expect("name", "a route method after '@' (get, post, put or delete)")
        if name.value not in ROUTE_METHODS:
            raise self.fail(f"unknown attribute '@{name.value}' (expected @get, @post, @put "
                            "or @delete)", name.span)
        self.expect("(", f"'(' and a path after '@{name.value}'")
        if not self.at("str"):
            if self.at(")"):
                raise self.fail(f"@{name.value} needs a path: @{name.value}(\"/path\")")
            raise self.fail(f"the argument of @{name.value} must be a string literal, found "
                            f"{self.tok.describe()}")
        path = self.advance()
        if self.at(",") and self.peek().kind == ")":  # a trailing comma, allowed as in any call
            self.advance()
        if not self.at(")"):
            raise self.fail(f"@{name.value} takes exactly one string literal argument")
        self.advance()
        return ast.RouteAttr(self.span_from(start), ROUTE_METHODS[name.value], path.value,
                             path.span)

    def function(self) -> ast.FunctionDef:
        start = self.tok
        is_async = bool(self.accept("async"))
        self.expect("def", "'def' after 'async'" if is_async else "'def'")
        name = self.expect("name", "a function name")
        self.expect("(", f"'(' after the function name '{name.value}'")
        params: list[ast.Param] = []
        while not self.at(")"):
            params.append(self.param())
            if not self.accept(","):
                break
        self.expect(")", "',' or ')' in the parameter list")
        returns = None
        if self.accept("->"):
            returns = self.type_expr()
        header = self.span_from(start)
        self.expect(":", "':' after the function signature")
        body = self.block()
        return ast.FunctionDef(header, name.value, name.span, params, returns, body, is_async)

    def param(self) -> ast.Param:
        name = self.expect("name", "a parameter name")
        if not self.at(":"):
            raise self.fail(f"parameter '{name.value}' needs a type: '{name.value}: Type'",
                            name.span)
        self.advance()
        annotation = self.type_expr()
        if self.at("="):
            raise self.fail("parameters have no default values")
        return ast.Param(self.span_from(name), name.value, annotation)

    # --- types --------------------------------------------------------------------------------

    def type_expr(self) -> ast.TypeExpr:
        self.nest()
        try:
            return self.type_expr_body()
        finally:
            self.depth -= 1

    def type_expr_body(self) -> ast.TypeExpr:
        start = self.tok
        if self.accept("["):
            inner = self.type_expr()
            self.expect("]", "']' after the list element type")
            node: ast.TypeExpr = ast.NamedType(self.span_from(start), "List", [inner])
        elif self.at("name") or self.at("None"):
            name = self.advance()
            args: list[ast.TypeExpr] = []
            if self.accept("["):
                while True:
                    args.append(self.type_expr())
                    if not self.accept(",") or self.at("]"):
                        break
                self.expect("]", "',' or ']' in the type arguments")
            node = ast.NamedType(self.span_from(start), str(name.value), args)
        elif self.at("(") and self.peek().kind == ")":
            self.advance()
            self.advance()
            node = ast.NamedType(self.span_from(start), "unit")
        else:
            raise self.fail(f"expected a type, found {self.tok.describe()}")
        while self.accept("?"):
            node = ast.OptionalType(self.span_from(start), node)
        return node

    # --- statements ---------------------------------------------------------------------------

    def block(self) -> list[ast.Stmt]:
        """After a ':': an indented run of statements, or one simple statement on this line."""
        if not self.accept("newline"):
            if self.at("eof"):
                raise self.fail("expected a statement after ':'")
            return [self.simple_statement()]
        if not self.accept("indent"):
            self.report(f"expected an indented block, found {self.tok.describe()}",
                        self.tok.span)
            return []
        self.blocks += 1
        try:
            return self.statements()
        finally:
            self.blocks -= 1

    def statements(self) -> list[ast.Stmt]:
        """The statements of an indented block, up to and including its DEDENT."""
        if self.blocks > MAX_BLOCKS:
            self.report(f"blocks nested too deeply (more than {MAX_BLOCKS} levels)",
                        self.tok.span)
            self.pos -= 1
            self.tok = self.tokens[self.pos]
            self.skip_block()
            return []
        body: list[ast.Stmt] = []
        while not self.at("dedent") and not self.at("eof"):
            start = self.pos
            try:
                body.append(self.statement())
            except ParseError:
                self.synchronize()
            if self.pos == start:
                self.advance()
        self.accept("dedent")
        return body

    def statement(self) -> ast.Stmt:
        kind = self.tok.kind
        if kind in KEYWORDS and self.peek().kind in ("=", "+=", "-=", "*="):
            raise self.fail(f"'{kind}' is a keyword and cannot be used as a variable name")
        if kind == "if":
            return self.if_stmt()
        if kind == "while":
            start = self.advance()
            test = self.expr()
            self.expect(":", "':' after the condition")
            return ast.While(self.span_from(start), test, self.block())
        if kind == "for":
            return self.for_stmt()
        if kind == "match":
            return self.match_stmt()
        if kind == "indent":
            raise self.fail("unexpected indentation")
        if kind in ("elif", "else"):
            raise self.fail(f"'{kind}' without a matching 'if'")
        if kind == "case":
            raise self.fail("'case' outside a 'match'")
        if kind in ("def", "async", "class", "@", "import", "from"):
            raise self.fail(f"'{kind}' is only allowed at top level")
        return self.simple_statement()

    def simple_statement(self) -> ast.Stmt:
        stmt = self.simple_statement_body()
        self.end_of_line()
        return stmt

    def simple_statement_body(self) -> ast.Stmt:
        start = self.tok
        kind = start.kind
        if kind in ("pass", "break", "continue"):
            self.advance()
            node = {"pass": ast.Pass, "break": ast.Break, "continue": ast.Continue}[kind]
            return node(start.span)
        if kind == "return":
            self.advance()
            value = self.expr() if self.tok.kind in EXPR_START else None
            return ast.Return(self.span_from(start), value)
        if kind == "let":
            return self.let_stmt()
        if kind in ("if", "while", "for", "match", "elif", "else", "case", "def", "async",
                    "class", "import", "from", "@"):
            raise self.fail(f"'{kind}' cannot be written on the same line after ':'")
        target = self.expr()
        if self.at("="):
            self.check_target(target)
            self.advance()
            value = self.expr()
            return ast.Assign(self.span_from(start), target, value)
        if self.tok.kind in AUGMENTED:
            self.check_target(target)
            op = AUGMENTED[self.advance().kind]
            value = self.expr()
            return ast.AugAssign(self.span_from(start), target, op, value)
        if self.at(":") and isinstance(target, ast.Name):
            raise self.fail(f"to declare a typed variable write 'let {target.id}: Type = ...'")
        return ast.ExprStmt(self.span_from(start), target)

    def check_target(self, target: ast.Expr) -> None:
        if not isinstance(target, (ast.Name, ast.Attribute, ast.Index)):
            raise self.fail("cannot assign to this expression (only to a variable, a field "
                            "'x.f' or an element 'xs[i]')", target.span)

    def let_stmt(self) -> ast.Let:
        start = self.advance()
        name = self.expect("name", "a variable name after 'let'")
        if not self.at(":"):
            raise self.fail(f"'let' needs a type: 'let {name.value}: Type = value'")
        self.advance()
        annotation = self.type_expr()
        self.expect("=", "'=' and a value (a 'let' always has an initial value)")
        value = self.expr()
        return ast.Let(self.span_from(start), name.value, name.span, annotation, value)

    def if_stmt(self) -> ast.If:
        """`if`/`elif`/`else`, built as nested Ifs in a loop (a long elif chain must not
        recurse)."""
        first = node = self.if_branch()
        while self.at("elif"):
            branch = self.if_branch()
            node.orelse = [branch]
            node = branch
        if self.at("else"):
            self.advance()
            if self.at("if"):
                raise self.fail("write 'elif' instead of 'else if'")
            self.expect(":", "':' after 'else'")
            node.orelse = self.block()
        return first

    def if_branch(self) -> ast.If:
        start = self.advance()  # 'if' or 'elif'
        test = self.expr()
        self.expect(":", "':' after the condition")
        span = self.span_from(start)  # the header: a body ends at a NEWLINE or DEDENT token
        return ast.If(span, test, self.block())

    def for_stmt(self) -> ast.For:
        start = self.advance()
        var = self.expect("name", "a loop variable after 'for'")
        self.expect("in", f"'in' after 'for {var.value}'")
        iterable = self.expr()
        self.expect(":", "':' after the loop's iterable")
        return ast.For(self.span_from(start), var.value, var.span, iterable, self.block())

    def match_stmt(self) -> ast.Match:
        start = self.advance()
        subject = self.expr()
        self.expect(":", "':' after the match subject")
        span = self.span_from(start)
        self.expect("newline", "the 'case' arms on the following lines")
        if not self.accept("indent"):
            raise self.fail("expected an indented block of 'case' arms")
        cases: list[ast.Case] = []
        while not self.at("dedent") and not self.at("eof"):
            start_pos = self.pos
            try:
                cases.append(self.case())
            except ParseError:
                self.synchronize()
            if self.pos == start_pos:
                self.advance()
        self.accept("dedent")
        return ast.Match(span, subject, cases)

    def case(self) -> ast.Case:
        start = self.expect("case", "'case' in the match block")
        pattern = self.pattern()
        self.expect(":", "':' after the pattern")
        span = self.span_from(start)
        return ast.Case(span, pattern, self.block())

    def pattern(self) -> ast.Pattern:
        start = self.tok
        if self.accept("None"):
            return ast.Pattern(start.span, "None")
        if not (self.at("name") and self.tok.value in PATTERNS):
            raise self.fail("expected a pattern: Ok(v), Err(e), Some(v) or None")
        kind = self.advance().value
        self.expect("(", f"'(' after '{kind}': {kind}(name) or {kind}(_)")
        binding = self.expect("name", f"a name or '_' inside {kind}(...)").value
        self.expect(")", f"')' after {kind}({binding}")
        return ast.Pattern(self.span_from(start), str(kind),
                           None if binding == "_" else str(binding))

    # --- expressions --------------------------------------------------------------------------

    def expr(self, min_prec: int = 1) -> ast.Expr:
        """Precedence climbing over the binary operators (all left-associative) and `not`."""
        if self.depth == 0:
            self.operators = 0
        self.nest()
        try:
            return self.climb(min_prec)
        finally:
            self.depth -= 1

    def nest(self) -> None:
        """Count one level of nesting; absurdly deep input is an error, not a crash of this
        recursive parser (or of the passes after it)."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"expression nested too deeply (more than {MAX_DEPTH} levels)")

    def climb(self, min_prec: int) -> ast.Expr:
        if self.tok.kind == "not" and min_prec <= NOT_PREC:
            start = self.advance()
            operand = self.expr(NOT_PREC)
            left: ast.Expr = ast.Unary(self.span_from(start), "not", operand)
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
            left = ast.Binary(left.span.to(right.span), op, left, right)
            if prec == COMPARISON_PREC and self.tok.kind in COMPARISONS:
                raise self.fail("comparisons cannot be chained; combine them with 'and'")

    def unary(self) -> ast.Expr:
        if not self.at("-"):
            return self.prefix()
        start = self.advance()
        self.nest()
        try:
            operand = self.unary()
        finally:
            self.depth -= 1
        span = self.span_from(start)
        if isinstance(operand, ast.IntLit):
            # `-` on an integer literal is folded, so -9223372036854775808 is an i64.
            if operand.value == -(I64_MAX + 1):
                self.report(f"integer literal {I64_MAX + 1} does not fit in i64", span)
            return ast.IntLit(span, -operand.value)
        if isinstance(operand, ast.FloatLit):
            return ast.FloatLit(span, -operand.value)
        return ast.Unary(span, "-", operand)

    def prefix(self) -> ast.Expr:
        kind = self.tok.kind
        if kind != "await" and kind != "try":
            return self.postfix()
        start = self.advance()
        self.nest()
        try:
            operand = self.prefix()
        finally:
            self.depth -= 1
        node = ast.Await if kind == "await" else ast.Try
        return node(self.span_from(start), operand)

    def postfix(self) -> ast.Expr:
        node = self.atom()
        while True:
            kind = self.tok.kind
            if kind == ".":
                self.advance()
                attr = self.expect("name", "a field name after '.'")
                node = ast.Attribute(self.span_from(node.span), node, attr.value)
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

    def try_type_args(self) -> list[ast.TypeExpr] | None:
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

    def index(self, value: ast.Expr) -> ast.Expr:
        self.advance()
        if self.at("]"):
            raise self.fail("expected an index inside '[]'")
        index = self.expr()
        if self.at(":"):
            raise self.fail("slices are not supported")
        if self.at(","):
            raise self.fail("an index is a single expression")
        self.expect("]", "']' after the index")
        return ast.Index(self.span_from(value.span), value, index)

    def call(self, func: ast.Expr, type_args: list[ast.TypeExpr]) -> ast.Call:
        opener = self.advance()  # '('
        args: list[ast.Expr] = []
        keywords: list[ast.Keyword] = []
        while not self.at(")"):
            if self.at("name") and self.peek().kind == "=":
                name = self.advance()
                self.advance()
                value = self.expr()
                keywords.append(ast.Keyword(self.span_from(name), str(name.value), value))
            else:
                arg = self.expr()
                if keywords:
                    raise self.fail("a positional argument cannot follow a keyword argument",
                                    arg.span)
                args.append(arg)
            if not self.accept(","):
                break
        self.close(opener, "',' or ')' in the argument list")
        return ast.Call(self.span_from(func.span), func, args, keywords, type_args)

    def close(self, opener: Token, what: str) -> None:
        """Expect the bracket closing `opener`; when it is missing on a later line, say which
        bracket is open (the usual cause of an error far from the typo)."""
        closer = ")" if opener.kind == "(" else "]"
        if self.accept(closer):
            return
        where = f" to close the '{opener.kind}' on line {opener.line}" \
            if self.tok.line != opener.line else ""
        raise self.fail(f"expected {what}{where}, found {self.tok.describe()}")

    def atom(self) -> ast.Expr:
        tok = self.tok
        kind = tok.kind
        if kind == "name":
            self.advance()
            return ast.Name(tok.span, str(tok.value))
        if kind == "int":
            self.advance()
            if tok.value > I64_MAX and not (tok.value == I64_MAX + 1 and self.negated()):
                self.report(f"integer literal {tok.value} does not fit in i64", tok.span)
            return ast.IntLit(tok.span, tok.value)
        if kind == "str":
            self.advance()
            return ast.StrLit(tok.span, str(tok.value))
        if kind == "float":
            self.advance()
            return ast.FloatLit(tok.span, tok.value)
        if kind in ("True", "False"):
            self.advance()
            return ast.BoolLit(tok.span, kind == "True")
        if kind == "None":
            self.advance()
            return ast.NoneLit(tok.span)
        if kind == "(":
            return self.parenthesized()
        if kind == "[":
            return self.list_literal()
        raise self.fail(f"expected an expression, found {tok.describe()}")

    def negated(self) -> bool:
        """Is the literal just consumed the direct operand of a unary minus written right
        before it (`-9223372036854775808`, not `- 9223372036854775808`)?"""
        if self.pos < 2:
            return False
        minus, literal = self.tokens[self.pos - 2], self.tokens[self.pos - 1]
        return (minus.kind == "-"
                and (minus.span.end_line, minus.span.end_col) == (literal.span.line, literal.span.col)
                and (self.pos < 3 or self.tokens[self.pos - 3].kind not in _VALUE_END))

    def parenthesized(self) -> ast.Expr:
        start = self.advance()
        if self.accept(")"):
            return ast.UnitLit(self.span_from(start))
        inner = self.expr()
        if self.at(","):
            raise self.fail("tuples are not supported")
        self.close(start, "')'")
        return inner

    def list_literal(self) -> ast.ListLit:
        start = self.advance()
        elements: list[ast.Expr] = []
        while not self.at("]"):
            elements.append(self.expr())
            if not self.accept(","):
                break
        self.close(start, "',' or ']' in the list")
        return ast.ListLit(self.span_from(start), elements)


#: Token kinds that end an operand: a `-` after one of these is binary, not unary.
_VALUE_END = frozenset(("name", "int", "float", "str", ")", "]", "True", "False", "None"))
