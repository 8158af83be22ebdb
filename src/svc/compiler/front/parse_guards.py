"""The parser's guard declarations: `@guard(f)` above a handler and `guard("/prefix", f, ...,
methods=[...])` at top level (docs/reference/language.md, "Guards").

The parser only reads their shape; which names are guards, which prefixes and methods are
valid, is check/guards.py's to say. `methods=` is the one keyword a `guard(...)` takes, once and
last, with a list of string literals: the rule a reader needs to see at a glance which routes
it guards, so a computed list is refused here.
"""

from __future__ import annotations

from svc.compiler.front import syntax
from svc.compiler.front.lexer import Token
from svc.compiler.front.parse_expressions import ExpressionParser

#: The keyword of `guard("/prefix", ..., methods=[...])`.
METHODS = "methods"


class GuardParser(ExpressionParser):
    """Guard attributes and declarations, on top of the expression parser."""

    def guard_attr(self) -> syntax.GuardAttr:
        """`@guard(name)`: one guard function per attribute (several run top to bottom)."""
        start = self.advance()
        self.advance()  # 'guard'
        self.expect("(", "'(' and a guard function's name after '@guard'")
        name = self.guard_name("@guard")
        self.accept(",")  # a trailing comma, allowed as in any call
        if not self.at(")"):
            raise self.fail("@guard takes one guard function's name: @guard(require_user); "
                            "write one @guard line per guard")
        self.advance()
        return syntax.GuardAttr(self.span_from(start), name.text, name.span)

    def guard_name(self, where: str) -> Token:
        if not self.at("name"):
            raise self.fail(f"{where} needs a guard function's name (such as require_user), "
                            f"found {self.tok.describe()}")
        return self.advance()

    def guard_decl(self) -> syntax.GuardDecl:
        """`guard("/prefix", first, second, methods=["POST"])` at top level: guards for every
        route under the prefix (with one of `methods`, when given), run in the order written."""
        start = self.advance()
        self.advance()  # '('
        if not self.at("str"):
            raise self.fail("guard(...) at top level starts with a path prefix in quotes: "
                            "guard(\"/admin\", require_admin)")
        prefix = self.advance()
        where = f'guard("{prefix.text}", ...)'
        guards: list[syntax.GuardAttr] = []
        methods: syntax.GuardMethods | None = None
        while self.accept(","):
            if self.at(")"):  # a trailing comma
                break
            if self.at("name") and self.peek().kind == "=":
                keyword = self.guard_methods(where)
                if methods is not None:
                    self.report(f"'{METHODS}' is given twice in {where}", keyword.span)
                methods = keyword
                continue
            name = self.guard_name(where)
            if methods is not None:
                self.report(f"'{METHODS}=' comes last in {where}, after the guard functions",
                            methods.span)
            guards.append(syntax.GuardAttr(name.span, name.text, name.span))
        if not self.at(")"):
            raise self.fail(f"expected ',' or ')' in guard(...), found {self.tok.describe()}")
        self.advance()
        if not guards:
            self.report(f'guard("{prefix.text}") names no guard function: '
                        f'guard("{prefix.text}", require_user)', prefix.span)
        return syntax.GuardDecl(self.span_from(start), prefix.text, prefix.span, guards, methods)

    def guard_methods(self, where: str) -> syntax.GuardMethods:
        """`methods=["POST", "PUT"]`: the methods whose routes the guards run on."""
        name = self.advance()
        if name.value != METHODS:
            raise self.fail(f"unknown keyword '{name.text}' in {where}: the one keyword is "
                            f"{METHODS}=[\"POST\", ...]", name.span)
        self.advance()  # '='
        value = self.expr()
        found: list[syntax.StrLit] = []
        items = value.elements if isinstance(value, syntax.ListLit) else [value]
        for item in items:
            if not isinstance(item, syntax.StrLit) or not isinstance(value, syntax.ListLit):
                self.report(f"'{METHODS}' in {where} takes a list of methods in quotes, such as "
                            f"{METHODS}=[\"POST\", \"DELETE\"]", item.span)
                break
            found.append(item)
        return syntax.GuardMethods(self.span_from(name), found)
