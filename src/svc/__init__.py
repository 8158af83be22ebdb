"""svc: a small statically typed backend language, its compiler `svcc` and its runtime.

    cli.py        the `svcc` command line: arguments, exit statuses, one `error:` line
    pipeline.py   the one path from a program's files to code objects, for every command
    project.py    project folders: svc.toml (the entry file, `[config]`, the server's tables)
    runner.py     runs a compiled program's `main` in this process; its end as an exit status
    process.py    what every way of running svc code needs from its process (streams, signals,
                  the event loop, the watchdog thread), said once
    bundle.py     `svcc build`: one self-contained executable per program (PyInstaller)
    launcher.py   the entry point of those executables, and the format of the program they carry
    rules/        the rules under both the compiler and the runtime (limits, patterns, svc.toml)
    compiler/     `.svc` files to checked programs to Python syntax trees
    runtime/      what a compiled program runs on: the server, the database, the builtins
    native/       the runtime's hot modules compiled with mypyc, used only when current
    dependencies/ a project's Python packages: svc.toml's [dependencies], svcc install, svc.lock
    tools/        the other commands: fmt, lsp, openapi, routes, test, run --watch

The layers, bottom up: rules; compiler and runtime (neither imports the other); the pipeline,
runner and tools over them; cli.py on top (docs/internals.md, "Layout").

`__version__` is the one place the version is written: pyproject.toml reads it (setuptools'
dynamic version), and so do `svcc --version`, the language server, the executables' build
cache and the `User-Agent` of outbound calls. tests/docs/test_version_mentions.py keeps the docs in step.
"""

__version__ = "0.4.0"
