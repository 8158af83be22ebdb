"""The front end: `.svc` files to syntax trees.

    lexer.py              source text → tokens (INDENT/DEDENT for blocks)
    lex_fstring.py        an f-string literal → one token holding its text and expressions
    parse_cursor.py       the parser's position in the tokens, error recording and recovery
    parser.py             tokens → a `syntax.Module` (declarations and statements)
    parse_expressions.py  the parser's types and expressions (precedence climbing)
    parse_guards.py       the parser's guard declarations (`@guard(f)`, `guard("/p", f, ...)`)
    parse_field_rules.py  the parser's field rules: `@length(1, 240)` lines above a class field
    parse_python.py       the parser's `@python("module", "function")` attribute
    syntax.py             the syntax tree's node classes, and `walk` over a tree
    imports.py            a program's files: read, parsed and ordered by their imports
    layout.py             the canonical layout of a file (`svcc fmt`), from its tokens

In: an entry file's path (plus, for an editor, an overlay of unsaved texts). Out, from
`imports.load_modules`: the modules in load order (dependencies first, the entry last), the
source files by path (to render diagnostics) and every lexical, syntax and import
diagnostic. The trees are not yet checked: their "checker:" fields are still None.
"""
