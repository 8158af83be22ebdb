"""The parser: tokens to a `syntax.Module`, by recursive descent.

This module parses declarations and statements; `parse_expressions` parses types and
expressions, and `parse_cursor` holds the position in the tokens, error recording and recovery
at statement boundaries (one typo gives one message; independent errors are all reported).
"""

from __future__ import annotations

import sys

from svc.compiler.front import syntax
from svc.compiler.diagnostics import Diagnostic
from svc.compiler.front.lexer import KEYWORDS, Token, tokenize
from svc.compiler.front.parse_cursor import ParseError
from svc.compiler.front.parse_expressions import EXPR_START
from svc.compiler.front.parse_field_rules import FieldRuleParser
from svc.compiler.front.parse_guards import GuardParser
from svc.compiler.front.parse_python import NO_BODY, PYTHON, PythonParser
from svc.compiler.source import SourceFile, Span
from svc.rules.contract import RECURSION_LIMIT, TriggerKind

ROUTE_METHODS = {"get": "GET", "post": "POST", "put": "PUT", "patch": "PATCH", "delete": "DELETE"}
#: The attributes of functions run outside requests (durable jobs and schedules), by spelling.
TRIGGER_ATTRIBUTES = {kind.value: kind for kind in TriggerKind}
#: What each trigger attribute's string literal is, and an example of it (for messages).
_TRIGGER_ARGUMENTS = {TriggerKind.JOB: ("a job name", "send_email"),
                      TriggerKind.EVERY: ("a period", "5m"),
                      TriggerKind.CRON: ("a cron expression", "0 3 * * *")}
ATTRIBUTES_TEXT = "@get, @post, @put, @patch, @delete, @job, @every, @cron, @guard or @python"
MAX_BLOCKS = 100
AUGMENTED = {"+=": "+", "-=": "-", "*=": "*"}
PATTERNS = ("Ok", "Err", "Some")


def parse(source: SourceFile) -> tuple[syntax.Module, list[Diagnostic]]:
    """Parse one file. Lexical and syntax diagnostics are returned together."""
    # Nesting is capped at MAX_DEPTH levels, a few frames each: make sure Python allows that
    # (and the later passes, which recurse over the same tree).
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    tokens, lex_diagnostics = tokenize(source)
    parser = Parser(source.path, tokens, {d.span.line for d in lex_diagnostics})
    module = parser.module()
    return module, lex_diagnostics + parser.diagnostics


class Parser(GuardParser, FieldRuleParser, PythonParser):
    """Declarations and statements, on top of the expression parser (and the guards',
    parse_guards.py, the field rules' lines, parse_field_rules.py, and `@python`,
    parse_python.py)."""

    # --- declarations -------------------------------------------------------------------------

    def module(self) -> syntax.Module:
        items: list[syntax.Decl] = []
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
        return syntax.Module(self.file, items)

    def declaration(self) -> syntax.Decl | None:
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
        if kind == "name" and self.tok.value == "enum" and self.peek().kind == "name":
            return self.enum_def()
        if kind == "name" and self.tok.value == "guard" and self.peek().kind == "(":
            guards = self.guard_decl()
            self.end_of_line()
            return guards
        if kind == "name" and self.peek().kind == ":":
            return self.const_def()
        if kind == "indent":
            raise self.fail("unexpected indentation")
        if kind == "dedent":
            self.advance()
            return None
        raise self.fail("expected a declaration at top level (import, class, enum, def, async "
                        f"def or a constant 'NAME: Type = value'), found {self.tok.describe()}")

    def end_of_line(self) -> None:
        if not self.accept("newline") and not self.at("eof"):
            raise self.fail(f"expected end of line, found {self.tok.describe()}")

    def import_all(self) -> syntax.Import:
        start = self.advance()
        path = self.expect("str", "a file name in quotes after 'import'")
        self.end_of_line()
        return syntax.Import(Span(self.file, start.line, start.col, path.line, path.end_col),
                             path.text)

    def import_names(self) -> syntax.Import:
        start = self.advance()
        path = self.expect("str", "a file name in quotes after 'from'")
        self.expect("import", "'import' after the file name")
        names, spans = [], []
        while True:
            name = self.expect("name", "a name to import")
            names.append(name.text)
            spans.append(name.span)
            if not self.accept(","):
                break
            if self.at("newline"):
                break
        node = syntax.Import(self.span_from(start), path.text, names, spans)
        self.end_of_line()
        return node

    def class_def(self) -> syntax.ClassDef:
        start = self.advance()
        name = self.expect("name", "a class name")
        if self.at("("):
            raise self.fail("classes have no base classes: write 'class Name:'")
        type_params = self.type_params() if self.at("[") else []
        self.expect(":", "':' after the class name")
        fields: list[syntax.Field] = []
        span = Span(self.file, start.line, start.col, name.line, name.end_col)
        if self.accept("newline"):
            if not self.accept("indent"):
                self.report("expected an indented block of fields 'name: Type'", self.tok.span)
                return syntax.ClassDef(span, name.text, name.span, fields, type_params)
            while not self.at("dedent") and not self.at("eof"):
                try:
                    fields.append(self.field())
                except ParseError:
                    self.synchronize()
            self.accept("dedent")
        else:
            fields.append(self.field())
        return syntax.ClassDef(span, name.text, name.span, fields, type_params)

    def type_params(self) -> list[syntax.TypeParamDecl]:
        """`[T, U]` after a generic class's name: its type parameters, one name each."""
        opener = self.advance()
        params: list[syntax.TypeParamDecl] = []
        while True:
            name = self.expect("name", "a type parameter name in 'class Name[T]'")
            params.append(syntax.TypeParamDecl(name.span, name.text))
            if not self.accept(",") or self.at("]"):
                break
        self.close(opener, "',' or ']' after the type parameters")
        return params

    def const_def(self) -> syntax.ConstDef:
        """`NAME: Type = value` at top level: a module-level constant."""
        name = self.advance()
        self.advance()  # ':'
        annotation = self.type_expr()
        self.expect("=", f"'=' and a value: a constant needs one ('{name.value}: Type = value')")
        value = self.expr()
        node = syntax.ConstDef(self.span_from(name), name.text, name.span, annotation, value)
        self.end_of_line()
        return node

    def enum_def(self) -> syntax.EnumDef:
        """`enum Role: admin, member`, or the member names one per line in an indented block
        (like a class's fields)."""
        start = self.advance()
        name = self.expect("name", "an enum name")
        self.expect(":", "':' after the enum name")
        span = Span(self.file, start.line, start.col, name.line, name.end_col)
        node = syntax.EnumDef(span, name.text, name.span, [], [])
        if not self.accept("newline"):
            self.enum_members(node)
            self.end_of_line()
            return node
        if not self.accept("indent"):
            self.report("expected the member names of the enum, one per line or "
                        "'enum Name: a, b'", self.tok.span)
            return node
        while not self.at("dedent") and not self.at("eof"):
            try:
                self.enum_members(node)
                self.end_of_line()
            except ParseError:
                self.synchronize()
        self.accept("dedent")
        return node

    def enum_members(self, node: syntax.EnumDef) -> None:
        """One line of member names, separated by commas."""
        while True:
            member = self.expect("name", f"a member name of enum {node.name}")
            node.members.append(member.text)
            node.member_spans.append(member.span)
            if not self.accept(",") or self.at("newline") or self.at("eof"):
                return

    def field(self) -> syntax.Field:
        rules = self.field_rules() if self.at("@") else []
        if self.tok.kind in ("def", "async"):
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
        return syntax.Field(self.span_from(name), name.text, annotation, rules)

    def routed_function(self) -> syntax.FunctionDef | syntax.ClassDef:
        """A function under attributes: route attributes, or a background one (@job, @every,
        @cron), or `@python` above a bodiless signature; which may go together is the
        checker's rule (check/background.py, check/python_functions.py)."""
        routes: list[syntax.RouteAttr] = []
        background: list[syntax.BackgroundAttr] = []
        guards: list[syntax.GuardAttr] = []
        python: syntax.PythonAttr | None = None
        bodiless = False  # under a @python attribute, even one with a mistake
        attrs: list[Token] = []
        while self.at("@"):
            attrs.append(self.tok)
            if self.peek().kind == "name" and self.peek().value in TRIGGER_ATTRIBUTES:
                background.append(self.background_attr())
            elif self.peek().kind == "name" and self.peek().value == "guard":
                guards.append(self.guard_attr())
            elif self.peek().kind == "name" and self.peek().value == PYTHON:
                bodiless = True
                attr = self.recovering_python_attr()
                if attr is None:
                    continue  # reported, and the rest of its line skipped
                if python is not None:
                    self.report("a function has one @python attribute", attr.span)
                python = python or attr
            else:
                routes.append(self.route_attr())
            self.end_of_line()
        if bodiless and self.at("def"):  # the checker says it must be async
            function = self.function(bodiless=True)
            function.python = python
            return function
        if self.at("def") or self.at("class"):
            # Not a handler: report once, at the attribute, and keep the declaration.
            self.report(f"an attribute must be directly above an 'async def', not a "
                        f"'{self.tok.kind}'", attrs[0].span)
            return self.class_def() if self.at("class") else self.function()
        if not self.at("async"):
            raise self.fail(f"expected 'async def' after the attribute, found "
                            f"{self.tok.describe()}")
        function = self.function(bodiless=bodiless)
        function.routes = routes
        function.background = background
        function.guards = guards
        function.python = python
        return function

    def recovering_python_attr(self) -> syntax.PythonAttr | None:
        """A `@python(...)` line; after a mistake in it (reported), None, past the line, so
        the signature under it still parses as a bodiless one (one mistake, one message)."""
        try:
            return self.python_attr()
        except ParseError:
            self.synchronize()
            return None

    def route_attr(self) -> syntax.RouteAttr:
        start = self.advance()
        name = self.expect("name", f"an attribute name after '@' ({ATTRIBUTES_TEXT})")
        if name.value not in ROUTE_METHODS:
            raise self.fail(f"unknown attribute '@{name.value}' (expected {ATTRIBUTES_TEXT})",
                            name.span)
        path, options = self.attr_arguments(name.text, "a path", "/path")
        return syntax.RouteAttr(self.span_from(start), ROUTE_METHODS[name.value], path.text,
                                path.span, options)

    def background_attr(self) -> syntax.BackgroundAttr:
        start = self.advance()
        kind = TRIGGER_ATTRIBUTES[self.advance().text]
        what, example = _TRIGGER_ARGUMENTS[kind]
        text, options = self.attr_arguments(kind.value, what, example)
        return syntax.BackgroundAttr(self.span_from(start), kind, text.text, text.span, options)

    def attr_arguments(self, attr: str, what: str,
                       example: str) -> tuple[Token, list[syntax.AttrOption]]:
        """`("text", name=literal, ...)` after an attribute's name: the string literal and the
        options (each an integer or string literal; which names an attribute takes is the
        checker's rule)."""
        self.expect("(", f"'(' and {what} after '@{attr}'")
        if not self.at("str"):
            if self.at(")"):
                raise self.fail(f"@{attr} needs {what}: @{attr}(\"{example}\")")
            raise self.fail(f"the argument of @{attr} must be a string literal, found "
                            f"{self.tok.describe()}")
        text = self.advance()
        found: list[syntax.AttrOption] = []
        while self.at(","):
            if self.peek().kind == ")":  # a trailing comma, allowed as in any call
                self.advance()
                break
            self.advance()
            found.append(self.attr_option(attr))
        if not self.at(")"):
            raise self.fail(f"expected ',' or ')' in the arguments of @{attr}, found "
                            f"{self.tok.describe()}")
        self.advance()
        return text, found

    def attr_option(self, attr: str) -> syntax.AttrOption:
        if not (self.at("name") and self.peek().kind == "="):
            raise self.fail(f"after its first argument, @{attr} takes only options "
                            f"'name=value', found {self.tok.describe()}")
        name = self.advance()
        self.advance()
        if not (self.at("int") or self.at("str")):
            raise self.fail(f"the value of option '{name.text}' of @{attr} must be an integer "
                            f"or string literal, found {self.tok.describe()}")
        value = self.advance()
        return syntax.AttrOption(self.span_from(name), name.text, value.value,  # type: ignore[arg-type]
                                 value.span)

    def function(self, bodiless: bool = False) -> syntax.FunctionDef:
        """`def` or `async def`, with its body; `bodiless` (under `@python`): the signature
        line ends it."""
        start = self.tok
        is_async = bool(self.accept("async"))
        self.expect("def", "'def' after 'async'" if is_async else "'def'")
        name = self.expect("name", "a function name")
        self.expect("(", f"'(' after the function name '{name.value}'")
        params: list[syntax.Param] = []
        while not self.at(")"):
            params.append(self.param())
            if not self.accept(","):
                break
        self.expect(")", "',' or ')' in the parameter list")
        returns = None
        if self.accept("->"):
            returns = self.type_expr()
        header = self.span_from(start)
        if bodiless:
            body = self.bodiless_end()
        else:
            self.expect(":", "':' after the function signature")
            body = self.block()
        return syntax.FunctionDef(header, name.text, name.span, params, returns, body, is_async)

    def bodiless_end(self) -> list[syntax.Stmt]:
        """After a @python function's signature: the end of the line. A ':' and a body are
        reported once, and the body is read (and dropped) so the rest parses as usual."""
        if self.at(":"):
            self.report(NO_BODY, self.tok.span)
            self.advance()
            self.block()
            return []
        if not self.accept("newline") and not self.at("eof"):
            raise self.fail("expected end of line after the signature of a @python function "
                            f"(it has no body), found {self.tok.describe()}")
        return []

    def param(self) -> syntax.Param:
        name = self.expect("name", "a parameter name")
        if not self.at(":"):
            raise self.fail(f"parameter '{name.value}' needs a type: '{name.value}: Type'",
                            name.span)
        self.advance()
        annotation = self.type_expr()
        if self.at("="):
            raise self.fail("parameters have no default values")
        return syntax.Param(self.span_from(name), name.text, annotation)

    # --- statements ---------------------------------------------------------------------------

    def block(self) -> list[syntax.Stmt]:
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

    def statements(self) -> list[syntax.Stmt]:
        """The statements of an indented block, up to and including its DEDENT."""
        if self.blocks > MAX_BLOCKS:
            self.report(f"blocks nested too deeply (more than {MAX_BLOCKS} levels)",
                        self.tok.span)
            self.pos -= 1
            self.tok = self.tokens[self.pos]
            self.skip_block()
            return []
        body: list[syntax.Stmt] = []
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

    def statement(self) -> syntax.Stmt:
        kind = self.tok.kind
        if kind in KEYWORDS and self.peek().kind in ("=", "+=", "-=", "*="):
            raise self.fail(f"'{kind}' is a keyword and cannot be used as a variable name")
        if kind == "if":
            return self.if_stmt()
        if kind == "while":
            start = self.advance()
            test = self.expr()
            self.expect(":", "':' after the condition")
            return syntax.While(self.span_from(start), test, self.block())
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

    def simple_statement(self) -> syntax.Stmt:
        stmt = self.simple_statement_body()
        self.end_of_line()
        return stmt

    def simple_statement_body(self) -> syntax.Stmt:
        start = self.tok
        kind = start.kind
        if kind in ("pass", "break", "continue"):
            self.advance()
            node = {"pass": syntax.Pass, "break": syntax.Break, "continue": syntax.Continue}[kind]
            return node(start.span)
        if kind == "return":
            self.advance()
            value = self.expr() if self.tok.kind in EXPR_START else None
            return syntax.Return(self.span_from(start), value)
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
            return syntax.Assign(self.span_from(start), target, value)
        if self.tok.kind in AUGMENTED:
            self.check_target(target)
            op = AUGMENTED[self.advance().kind]
            value = self.expr()
            return syntax.AugAssign(self.span_from(start), target, op, value)
        if self.at(":") and isinstance(target, syntax.Name):
            raise self.fail(f"to declare a typed variable write 'let {target.id}: Type = ...'")
        return syntax.ExprStmt(self.span_from(start), target)

    def check_target(self, target: syntax.Expr) -> None:
        if not isinstance(target, (syntax.Name, syntax.Attribute, syntax.Index)):
            raise self.fail("cannot assign to this expression (only to a variable, a field "
                            "'x.f' or an element 'xs[i]')", target.span)

    def let_stmt(self) -> syntax.Let:
        start = self.advance()
        name = self.expect("name", "a variable name after 'let'")
        if not self.at(":"):
            raise self.fail(f"'let' needs a type: 'let {name.value}: Type = value'")
        self.advance()
        annotation = self.type_expr()
        self.expect("=", "'=' and a value (a 'let' always has an initial value)")
        value = self.expr()
        return syntax.Let(self.span_from(start), name.text, name.span, annotation, value)

    def if_stmt(self) -> syntax.If:
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

    def if_branch(self) -> syntax.If:
        start = self.advance()  # 'if' or 'elif'
        test = self.expr()
        self.expect(":", "':' after the condition")
        span = self.span_from(start)  # the header: a body ends at a NEWLINE or DEDENT token
        return syntax.If(span, test, self.block())

    def for_stmt(self) -> syntax.For:
        start = self.advance()
        var = self.expect("name", "a loop variable after 'for'")
        self.expect("in", f"'in' after 'for {var.value}'")
        iterable = self.expr()
        self.expect(":", "':' after the loop's iterable")
        return syntax.For(self.span_from(start), var.text, var.span, iterable, self.block())

    def match_stmt(self) -> syntax.Match:
        start = self.advance()
        subject = self.expr()
        self.expect(":", "':' after the match subject")
        span = self.span_from(start)
        self.expect("newline", "the 'case' arms on the following lines")
        if not self.accept("indent"):
            raise self.fail("expected an indented block of 'case' arms")
        cases: list[syntax.Case] = []
        while not self.at("dedent") and not self.at("eof"):
            start_pos = self.pos
            try:
                cases.append(self.case())
            except ParseError:
                self.synchronize()
            if self.pos == start_pos:
                self.advance()
        self.accept("dedent")
        return syntax.Match(span, subject, cases)

    def case(self) -> syntax.Case:
        start = self.expect("case", "'case' in the match block")
        pattern = self.pattern()
        self.expect(":", "':' after the pattern")
        span = self.span_from(start)
        return syntax.Case(span, pattern, self.block())

    def pattern(self) -> syntax.Pattern:
        start = self.tok
        if self.accept("None"):
            return syntax.Pattern(start.span, "None")
        if self.at("name") and self.peek().kind == ".":
            return self.member_pattern()
        if not (self.at("name") and self.tok.value in PATTERNS):
            raise self.fail("expected a pattern: Ok(v), Err(e), Some(v), None or an enum "
                            "member (Role.admin)")
        kind = self.advance().value
        self.expect("(", f"'(' after '{kind}': {kind}(name) or {kind}(_)")
        name = self.expect("name", f"a name or '_' inside {kind}(...)")
        binding = name.value
        self.expect(")", f"')' after {kind}({binding}")
        if binding == "_":
            return syntax.Pattern(self.span_from(start), str(kind))
        return syntax.Pattern(self.span_from(start), str(kind), str(binding), name.span)

    def member_pattern(self) -> syntax.Pattern:
        """`case Role.admin:`: an enum member."""
        enum = self.advance()
        self.advance()  # '.'
        member = self.expect("name", f"a member name after '{enum.value}.'")
        return syntax.Pattern(self.span_from(enum), f"{enum.value}.{member.value}",
                              enum=str(enum.value), member=str(member.value))
