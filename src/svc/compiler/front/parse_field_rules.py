"""The parser's field rules: `@length(1, 240)` lines directly above a class field.

Any `@name(arguments)` parses here, its arguments as expressions: which names are rules, on
which field types, and that the arguments are literals is the checker's to say
(check/field_rules.py), so every such mistake in a class is reported together.
"""

from __future__ import annotations

from svc.compiler.front import syntax
from svc.compiler.front.parse_expressions import ExpressionParser


class FieldRuleParser(ExpressionParser):
    """The attribute lines of a class field, on top of the expression parser."""

    def field_rules(self) -> list[syntax.FieldRule]:
        """The `@rule(...)` lines at the cursor, one per line, up to the field they are on."""
        rules: list[syntax.FieldRule] = []
        while self.at("@"):
            rules.append(self.field_rule())
            if not self.accept("newline"):
                raise self.fail(f"expected end of line after a field rule, found "
                                f"{self.tok.describe()} (write one rule per line, above "
                                "the field)")
        if self.tok.kind in ("def", "async"):
            raise self.fail("a class has only fields 'name: Type'; define functions at "
                            "top level", rules[0].span)
        if self.at("dedent") or self.at("eof"):
            raise self.fail("a field rule must be directly above a field 'name: Type'",
                            rules[0].span)
        return rules

    def field_rule(self) -> syntax.FieldRule:
        start = self.advance()  # '@'
        name = self.expect("name", "a rule name after '@' (@length, @range, @pattern or "
                                   "@one_of)")
        if not self.at("("):
            raise self.fail(f"@{name.value} needs its arguments in parentheses, such as "
                            "@length(1, 240)", self.span_from(start))
        opener = self.advance()
        args: list[syntax.Expr] = []
        while not self.at(")"):
            args.append(self.expr())
            if not self.accept(","):
                break
        self.close(opener, f"',' or ')' in the arguments of @{name.value}")
        return syntax.FieldRule(self.span_from(start), name.text, name.span, args)
