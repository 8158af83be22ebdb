"""The parser's Python declarations: `@python("module", "attribute", error="kind")` above a
bodiless `async def` (docs/reference/language.md, "Python functions").

The parser reads only the attribute's shape (two string literals, then the one option
`error=`, a string literal) and that the signature line ends the declaration. What the strings
name, which kinds of error exist and which types may cross the boundary is the checker's to
say (check/python_functions.py), so every such mistake is reported together, at its string.
"""

from __future__ import annotations

from svc.compiler.front import syntax
from svc.compiler.front.lexer import Token
from svc.compiler.front.parse_expressions import ExpressionParser

#: The attribute's name, as written after '@'.
PYTHON = "python"
#: Its one option: the kind of error a Python exception becomes.
ERROR_OPTION = "error"
_USAGE = '@python("module", "function")'
NO_BODY = "a @python function has no body: its signature line ends it"


class PythonParser(ExpressionParser):
    """The `@python(...)` attribute and the end of a bodiless signature."""

    def python_attr(self) -> syntax.PythonAttr:
        start = self.advance()  # '@'
        self.advance()  # 'python'
        self.expect("(", f"'(' after '@python': {_USAGE}")
        module = self.python_string("a Python module's name")
        self.expect(",", f"',' and the name of a function in the module: {_USAGE}")
        attribute = self.python_string("the name of a function in the module")
        node = syntax.PythonAttr(start.span, module.text, module.span, attribute.text,
                                 attribute.span)
        while self.accept(","):
            if self.at(")"):  # a trailing comma, allowed as in any call
                break
            self.python_option(node)
        if not self.at(")"):
            raise self.fail(f"expected ',' or ')' in the arguments of @python, found "
                            f"{self.tok.describe()}")
        self.advance()
        node.span = self.span_from(start)
        return node

    def python_string(self, what: str) -> Token:
        if not self.at("str"):
            raise self.fail(f"@python needs {what} as a string literal: {_USAGE}, found "
                            f"{self.tok.describe()}")
        return self.advance()

    def python_option(self, node: syntax.PythonAttr) -> None:
        """`error="invalid"`: the one option; given twice, the second is reported."""
        if not (self.at("name") and self.peek().kind == "="):
            raise self.fail(f"after the module and the function, @python takes only the "
                            f"option {ERROR_OPTION}=\"kind\", found {self.tok.describe()}")
        name = self.advance()
        if name.value != ERROR_OPTION:
            raise self.fail(f"unknown option '{name.text}' of @python (the one option is "
                            f"{ERROR_OPTION}=\"kind\")", name.span)
        self.advance()  # '='
        if not self.at("str"):
            raise self.fail(f"the value of {ERROR_OPTION}= is an error kind in quotes, such as "
                            f"{ERROR_OPTION}=\"invalid\", found {self.tok.describe()}")
        value = self.advance()
        if node.error is not None:
            self.report(f"option '{ERROR_OPTION}' of @python is given twice", name.span)
            return
        node.error, node.error_span = value.text, value.span
