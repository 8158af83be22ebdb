"""The parser: the AST it builds for every construct, and its error recovery."""

from __future__ import annotations

from svc.compiler.front import syntax
from svc.compiler.front.parser import parse
from svc.compiler.source import SourceFile


def module(text: str) -> syntax.Module:
    tree, diagnostics = parse(SourceFile("t.svc", text))
    assert diagnostics == [], [(d.span.line, d.span.col, d.message) for d in diagnostics]
    return tree


def errors(text: str) -> list[tuple[int, int, str]]:
    return [(d.span.line, d.span.col, d.message) for d in parse(SourceFile("t.svc", text))[1]]


def body(text: str) -> list[syntax.Stmt]:
    """The statements of `def f():` with `text` as its (indented) body."""
    indented = "".join("    " + line + "\n" for line in text.splitlines())
    return module("def f():\n" + indented).items[0].body


def expr(text: str) -> syntax.Expr:
    stmt = body(text)[0]
    assert isinstance(stmt, syntax.ExprStmt)
    return stmt.expr


def show(node) -> str:
    """A compact prefix form of an expression, to assert tree shapes."""
    if isinstance(node, syntax.Binary):
        return f"({node.op} {show(node.left)} {show(node.right)})"
    if isinstance(node, syntax.Unary):
        return f"({node.op} {show(node.operand)})"
    if isinstance(node, syntax.Await):
        return f"(await {show(node.value)})"
    if isinstance(node, syntax.Try):
        return f"(try {show(node.value)})"
    if isinstance(node, syntax.Name):
        return node.id
    if isinstance(node, (syntax.IntLit, syntax.FloatLit, syntax.BoolLit)):
        return str(node.value)
    if isinstance(node, syntax.StrLit):
        return repr(node.value)
    if isinstance(node, syntax.NoneLit):
        return "None"
    if isinstance(node, syntax.UnitLit):
        return "()"
    if isinstance(node, syntax.Attribute):
        return f"{show(node.value)}.{node.attr}"
    if isinstance(node, syntax.Index):
        return f"{show(node.value)}[{show(node.index)}]"
    if isinstance(node, syntax.ListLit):
        return "[" + ", ".join(show(e) for e in node.elements) + "]"
    if isinstance(node, syntax.Call):
        types = "[" + ", ".join(show_type(t) for t in node.type_args) + "]" if node.type_args \
            else ""
        args = [show(a) for a in node.args] + [f"{k.name}={show(k.value)}" for k in node.keywords]
        return f"{show(node.func)}{types}({', '.join(args)})"
    raise AssertionError(node)


def show_type(node) -> str:
    if isinstance(node, syntax.OptionalType):
        return show_type(node.inner) + "?"
    if node.args:
        return f"{node.name}[{', '.join(show_type(a) for a in node.args)}]"
    return node.name


def test_precedence_follows_the_language_reference() -> None:
    assert show(expr("a or b and not c == d + e * -f")) == \
        "(or a (and b (not (== c (+ d (* e (- f)))))))"
    assert show(expr("a - b - c")) == "(- (- a b) c)"
    assert show(expr("a / b % c * d")) == "(* (% (/ a b) c) d)"
    assert show(expr("not a and b")) == "(and (not a) b)"
    assert show(expr("-x.f[0](1)")) == "(- x.f[0](1))"


def test_await_and_try_bind_tighter_than_unary_minus_and_looser_than_postfix() -> None:
    assert show(expr("try await db_open(p)")) == "(try (await db_open(p)))"
    assert show(expr("-try f()")) == "(- (try f()))"
    assert show(expr("try f() == 0")) == "(== (try f()) 0)"
    assert show(expr("await x.y")) == "(await x.y)"


def test_negative_literals_fold_and_the_i64_minimum_is_allowed() -> None:
    assert show(expr("-9223372036854775808")) == str(-2**63)
    assert show(expr("x - -1")) == "(- x -1)"
    assert errors("def f():\n    x = 9223372036854775808\n") == [
        (2, 9, "integer literal 9223372036854775808 does not fit in i64")]
    assert errors("def f():\n    x = 1 -9223372036854775808\n")[0][:2] == (2, 12)
    assert len(errors("def f():\n    x = --9223372036854775808\n")) == 1


def test_comparisons_do_not_chain() -> None:
    assert errors("def f():\n    return a < b < c\n") == [
        (2, 18, "comparisons cannot be chained; combine them with 'and'")]
    assert errors("def f():\n    return a == b != c\n")[0][:2] == (2, 19)
    assert show(expr("a < b and b < c")) == "(and (< a b) (< b c))"


def test_generic_calls_are_told_apart_from_indexing() -> None:
    assert show(expr("db_all[Task](db, sql)")) == "db_all[Task](db, sql)"
    assert show(expr("json_decode[List[Task]](s)")) == "json_decode[List[Task]](s)"
    assert show(expr("f[i64?](x)")) == "f[i64?](x)"
    assert show(expr("xs[i]")) == "xs[i]"
    assert show(expr("xs[i + 1]")) == "xs[(+ i 1)]"
    assert show(expr("xs[0](1)")) == "xs[0](1)"
    assert show(expr("grid[i][j]")) == "grid[i][j]"


def test_calls_lists_units_and_trailing_commas() -> None:
    assert show(expr("User(id=1, name='ada',)")) == "User(id=1, name='ada')"
    assert show(expr("f(1, [2, 3,], ())")) == "f(1, [2, 3], ())"
    assert show(expr("f()")) == "f()"
    assert show(expr("[]")) == "[]"
    assert show(expr("(a + b) * c")) == "(* (+ a b) c)"
    multi = expr("f(\n  1,\n    2,\n)")
    assert show(multi) == "f(1, 2)"


def test_literals() -> None:
    assert show(expr("[1_000, 2.5, 'x', True, false, null, None]")) == \
        "[1000, 2.5, 'x', True, False, None, None]"


def test_assignments_and_let() -> None:
    stmts = body("x = 1\nx.f = 2\nxs[0] = 3\nx += 1\nx -= 1\nx *= 2\nlet y: List[i64] = []")
    assert [type(s).__name__ for s in stmts] == ["Assign", "Assign", "Assign", "AugAssign",
                                                 "AugAssign", "AugAssign", "Let"]
    assert [s.op for s in stmts[3:6]] == ["+", "-", "*"]
    let = stmts[6]
    assert let.name == "y" and show_type(let.annotation) == "List[i64]"
    assert (let.name_span.line, let.name_span.col) == (8, 9)


def test_types() -> None:
    tree = module("def f(a: i64, b: [str], c: Task?, d: Result[List[i32?], Error], "
                  "e: view[bytes]) -> Result[unit, Error]:\n    pass\n")
    function = tree.items[0]
    assert [show_type(p.annotation) for p in function.params] == [
        "i64", "List[str]", "Task?", "Result[List[i32?], Error]", "view[bytes]"]
    assert show_type(function.returns) == "Result[unit, Error]"
    assert module("def g():\n    pass\n").items[0].returns is None


def test_control_flow() -> None:
    stmts = body("if a:\n    pass\nelif b:\n    pass\nelif c: pass\nelse:\n    return 1\n"
                 "while x: break\nfor v in xs:\n    continue\nreturn")
    chain = stmts[0]
    assert isinstance(chain, syntax.If) and isinstance(chain.orelse[0], syntax.If)
    assert isinstance(chain.orelse[0].orelse[0], syntax.If)
    assert isinstance(chain.orelse[0].orelse[0].orelse[0], syntax.Return)
    assert isinstance(stmts[1], syntax.While) and isinstance(stmts[1].body[0], syntax.Break)
    assert isinstance(stmts[2], syntax.For) and stmts[2].var == "v"
    assert isinstance(stmts[3], syntax.Return) and stmts[3].value is None


def test_match_patterns() -> None:
    stmts = body("match try await f():\n    case Ok(v): pass\n    case Err(_):\n        pass\n"
                 "match m:\n    case Some(x): return x\n    case None: return 0")
    first, second = stmts
    assert [(c.pattern.kind, c.pattern.binding) for c in first.cases] == [("Ok", "v"),
                                                                          ("Err", None)]
    assert [(c.pattern.kind, c.pattern.binding) for c in second.cases] == [("Some", "x"),
                                                                           ("None", None)]
    assert show(first.subject) == "(try (await f()))"


def test_declarations() -> None:
    tree = module('import "models.svc"\nfrom "b.svc" import A, B\n'
                  'class P:\n    x: i64\n    y: str?\n'
                  'class Q: z: bool\n'
                  '@get("/p/{id}")\n@post(\'/p\')\nasync def h(id: i64,) -> Result[P, Error]:\n'
                  '    return ok(P(x=id, y=None))\n')
    imp, frm, p, q, h = tree.items
    assert imp.path == "models.svc" and imp.names is None
    assert frm.names == ["A", "B"] and [s.col for s in frm.name_spans] == [21, 24]
    assert [f.name for f in p.fields] == ["x", "y"] and q.fields[0].name == "z"
    assert h.is_async and [(r.method, r.path) for r in h.routes] == [("GET", "/p/{id}"),
                                                                     ("POST", "/p")]
    assert (h.routes[0].path_span.line, h.routes[0].path_span.col) == (7, 6)
    assert h.name == "h" and (h.name_span.line, h.name_span.col) == (9, 11)


def test_spans_cover_the_source() -> None:
    stmt = body("x = foo(1, 2) + 3")[0]
    assert (stmt.span.line, stmt.span.col, stmt.span.end_col) == (2, 5, 22)
    call = stmt.value.left
    assert (call.span.col, call.span.end_col) == (9, 18)


def test_recovery_reports_each_independent_error_once() -> None:
    text = ("def a():\n    x = (1 +\n    y = 2\n"
            "def b():\n    if x\n        pass\n    z = 3 3\n"
            "def c(p) -> i64:\n    return 1\n"
            "class D:\n    def m():\n        pass\n")
    found = errors(text)
    assert [(line, col) for line, col, _ in found] == [(2, 9), (5, 9), (7, 11), (8, 7), (11, 5)]
    assert "was never closed" in found[0][2]
    assert "expected ':'" in found[1][2]
    assert "expected end of line" in found[2][2]
    assert "parameter 'p' needs a type" in found[3][2]
    assert "only fields" in found[4][2]


def test_recovery_keeps_the_good_declarations() -> None:
    tree, diagnostics = parse(SourceFile("t.svc", "def a(:\n    pass\ndef b():\n    pass\n"))
    assert len(diagnostics) == 1
    assert [item.name for item in tree.items] == ["b"]


def test_helpful_messages() -> None:
    cases = {
        "def f():\n    x: i64 = 1\n": "write 'let x: Type = ...'",
        "def f():\n    if a:\n        pass\n    else if b:\n        pass\n": "'elif'",
        "def f():\n    f(x=1, 2)\n": "positional argument cannot follow a keyword",
        "def f():\n    1 = x\n": "cannot assign",
        "def f():\n    def g():\n        pass\n": "only allowed at top level",
        "def f():\n    x = (1, 2)\n": "tuples are not supported",
        "def f():\n    x = xs[1:2:3]\n": "a slice has no step",
        "def f():\n    let x = 1\n": "'let' needs a type",
        "def f(x: i64 = 1):\n    pass\n": "no default values",
        "def f():\n    match x:\n        case Foo(y): pass\n": "expected a pattern",
        "def f():\n        pass\n    pass\n": "unindent does not match",
        "x = 1\n": "expected a declaration at top level",
        "class A(B):\n    x: i64\n": "no base classes",
        '@get("/a")\ndef f():\n    pass\n': "directly above an 'async def'",
        '@get("/a", "/b")\nasync def f():\n    pass\n': "takes only options 'name=value'",
        "@get()\nasync def f():\n    pass\n": "needs a path",
        "@get(1)\nasync def f():\n    pass\n": "must be a string literal",
        "@options(\"/a\")\nasync def f():\n    pass\n": "unknown attribute '@options'",
        "def f():\n    case Ok(x): pass\n": "'case' outside a 'match'",
        "def f():\n    else: pass\n": "'else' without a matching 'if'",
        "def f()\n    pass\n": "expected ':'",
        "def f():\n    return\n  x = 1\n": "unindent does not match",
        "def f():\npass\n": "expected an indented block",
    }
    for text, message in cases.items():
        found = errors(text)
        assert len(found) == 1, (text, found)
        assert message in found[0][2], (text, found)


def test_unexpected_indentation_skips_the_block_with_one_error() -> None:
    found = errors("def f():\n    x = 1\n        y = 2\n        z = 3\n    w = 4\n")
    assert found == [(3, 9, "unexpected indentation")]


def test_lexical_errors_are_not_reported_again_by_the_parser() -> None:
    assert len(errors("def f():\n    x = 1 $ 2\n")) == 1
    assert len(errors('def f():\n    print("abc)\n    y = 1\n')) == 1
    assert len(errors("def f():\n    print(g(1)\n    return 1\n")) == 1


def test_absurd_nesting_is_a_diagnostic_not_a_crash() -> None:
    deep = {
        "def f():\n    x = " + "(" * 5000 + "1" + ")" * 5000 + "\n": "nested too deeply",
        "def f():\n    x = " + "-" * 5000 + "1\n": "nested too deeply",
        "def f():\n    x = " + "not " * 5000 + "y\n": "nested too deeply",
        "def f(x: " + "List[" * 3000 + "i64" + "]" * 3000 + "):\n    pass\n": "nested too deeply",
        "def f():\n" + "".join(" " * i + "if x:\n" for i in range(1, 300)) + " " * 300 + "pass\n":
            "blocks nested too deeply",
    }
    for text, message in deep.items():
        found = errors(text)
        assert len(found) == 1 and message in found[0][2], found
    assert show(expr("(" * 150 + "1" + ")" * 150)) == "1"


def test_long_chains_do_not_recurse() -> None:
    chain = body("if x == 0:\n    pass\n" + "".join(f"elif x == {i}:\n    pass\n"
                                                  for i in range(1, 3000)))[0]
    depth = 0
    while chain.orelse:
        chain, depth = chain.orelse[0], depth + 1
    assert depth == 2999
    assert isinstance(expr(" + ".join(["1"] * 1001)), syntax.Binary)  # 1,000 operators, the most


def test_an_expression_with_more_than_1000_operators_is_a_diagnostic() -> None:
    line = "    x = " + " + ".join(["1"] * 1002)
    column = line.index("+", len(line) - 5) + 1  # at the 1,001st operator
    assert errors("def main():\n" + line + "\n") == [(2, column, (
        "expression too long (more than 1000 operators); split it into several statements"))]


# --- @python declarations -------------------------------------------------------------------

PY_SIGNATURE = "async def slugify(title: str, max_length: i64?) -> Result[str, Error]\n"


def test_a_python_declaration_is_an_attribute_and_a_bodiless_signature() -> None:
    tree = module('@python("slugs", "slugify", error="invalid",)\n' + PY_SIGNATURE
                  + "\ndef main():\n    pass\n")
    f, main = tree.items
    assert isinstance(f, syntax.FunctionDef) and f.body == [] and f.is_async
    assert f.python is not None and main.python is None
    assert (f.python.module, f.python.attribute, f.python.error) == ("slugs", "slugify", "invalid")
    assert (f.python.module_span.line, f.python.module_span.col) == (1, 9)
    assert (f.python.attribute_span.col, f.python.error_span.col) == (18, 35)
    assert [p.name for p in f.params] == ["title", "max_length"]


def test_a_python_signature_may_span_lines_inside_its_parentheses() -> None:
    tree = module('@python("slugs", "slugify")\nasync def slugify(\n    title: str,\n)'
                  ' -> Result[str, Error]\ndef main():\n    pass\n')
    assert tree.items[0].python.error is None and len(tree.items) == 2


def test_a_body_under_python_is_one_error_and_the_rest_still_parses() -> None:
    text = ('@python("slugs", "slugify")\n' + PY_SIGNATURE.rstrip() + ":\n    return ok(title)\n"
            "def main():\n    pass\n")
    assert errors(text) == [(2, 70, "a @python function has no body: its signature line ends it")]
    assert [item.name for item in parse(SourceFile("t.svc", text))[0].items] == ["slugify",
                                                                                   "main"]


def test_python_attribute_mistakes_are_one_message_each_at_their_place() -> None:
    cases = {
        '@python("slugs")': (1, 16, "expected ',' and the name of a function in the module: "
                                    '@python("module", "function"), found \')\''),
        '@python(slugs, "f")': (1, 9, "@python needs a Python module's name as a string "
                                      'literal: @python("module", "function"), found name '
                                      "'slugs'"),
        '@python("slugs", "f", err="x")': (1, 23, "unknown option 'err' of @python (the one "
                                                  'option is error="kind")'),
        '@python("slugs", "f", error=3)': (1, 29, "the value of error= is an error kind in "
                                                  'quotes, such as error="invalid", found '
                                                  "number 3"),
        '@python("slugs", "f", "g")': (1, 23, "after the module and the function, @python "
                                              'takes only the option error="kind", found '
                                              "a string"),
        '@python("slugs", "f", error="a", error="b")': (1, 34, "option 'error' of @python is "
                                                               "given twice"),
        '@python("slugs", "f")\n@python("slugs", "g")': (2, 1, "a function has one @python "
                                                               "attribute"),
    }
    for attribute, expected in cases.items():
        assert errors(attribute + "\n" + PY_SIGNATURE) == [expected], attribute


def test_text_after_a_python_signature_is_an_error() -> None:
    assert errors('@python("slugs", "f")\nasync def f() -> Result[str, Error] pass\n') == [
        (2, 37, "expected end of line after the signature of a @python function (it has no "
                "body), found keyword 'pass'")]
