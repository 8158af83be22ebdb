"""The compiler: `.svc` files to a checked program, then to one Python syntax tree per file.

    front/            `.svc` files to syntax trees: lexer, parser, imports, the canonical layout
    check/            syntax trees to a checked program, or the diagnostics saying why not
    codegen/          a checked program to Python syntax trees
    sql/              a checked program's SQL against the schema its declared migrations build
    effects/          what the program's functions do outside the database: the routes the
                      runtime may run again after their transaction clashed
    program.py        the checked program: the checker's output and the code generator's input
    builtin_table.py  the built-in functions, one record each (checker, codegen, tools read it)
    svctypes.py       the types the checker and the code generator share
    source.py         source files and spans: where a token, node or diagnostic is
    diagnostics.py    compile errors with a position, rendered with a caret

The passes run in that order, each folder's map saying what goes in and comes out; svc.pipeline
drives them. The compiler imports svc.rules, never svc.runtime.
"""
