"""The compiler driver: load a program (entry file plus imports), run the passes, and the
`svcc check` command.

Nothing here raises for bad input: unreadable files, invalid UTF-8, import cycles and errors
in `svc.toml` are diagnostics like any other. The checker only runs on a program that loaded
and parsed cleanly, so one syntax error never causes a cascade of type errors.
"""

from __future__ import annotations

import ast as python_ast
import os
import sys
from typing import Any

from svc.compiler import syntax
from svc.compiler.diagnostics import Diagnostic, render
from svc.compiler.parser import parse
from svc.compiler.source import SourceFile, Span


def read_source(path: str, at: Span | None = None) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Read and decode one file. Problems are reported at `at` (an import's string), or at
    the file itself; invalid UTF-8 is reported at the first bad byte. A file that is not
    UTF-8 comes back with its diagnostic and a copy decoded with U+FFFD in place of the bad
    bytes: that copy is only for showing the line under the caret, never for parsing."""
    where = at or Span(path, 1, 1, 1, 1)
    if os.path.isdir(path):
        return None, [Diagnostic(f"'{path}' is a directory, not a .svc file", where)]
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None, [Diagnostic(f"cannot find file '{path}'", where)]
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        return None, [Diagnostic(f"cannot read '{path}': {reason}", where)]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (SourceFile(path, data.decode("utf-8", errors="replace")),
                [_invalid_utf8(path, data, exc.start)])
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(path, text), []


def _invalid_utf8(path: str, data: bytes, offset: int) -> Diagnostic:
    line_start = data.rfind(b"\n", 0, offset) + 1
    line = data.count(b"\n", 0, offset) + 1
    col = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
    return Diagnostic(f"invalid UTF-8 (byte 0x{data[offset]:02X}): source files must be UTF-8",
                      Span(path, line, col, line, col + 1))


def load_modules(entry: str) -> tuple[list[syntax.Module], dict[str, SourceFile],
                                      list[Diagnostic]]:
    """Load and parse `entry` and, transitively, the files it imports (each once).

    Returns the modules in load order (dependencies first, entry last), the sources by path
    (for rendering diagnostics) and all diagnostics. An import cycle is reported at the import
    that closes it; a missing file at the import's string."""
    loader = _Loader()
    source, diagnostics = read_source(os.path.normpath(entry))
    if loader.readable(source, diagnostics):
        loader.load(source, [])
    return loader.modules, loader.sources, diagnostics + loader.diagnostics


class _Loader:
    def __init__(self) -> None:
        self.modules: list[syntax.Module] = []
        self.sources: dict[str, SourceFile] = {}
        self.diagnostics: list[Diagnostic] = []
        self.loaded: dict[str, str] = {}  # real path -> display path, once parsed

    def readable(self, source: SourceFile | None, diagnostics: list[Diagnostic]) -> bool:
        """Was the file read cleanly? A file that is not UTF-8 is kept for showing its
        diagnostic, but not parsed."""
        if source is not None and diagnostics:
            self.sources[source.path] = source
        return source is not None and not diagnostics

    def load(self, source: SourceFile, stack: list[tuple[str, str]]) -> None:
        """Parse `source`, then its imports depth first; `stack` holds the (real path,
        display path) pairs of the files being loaded above this one."""
        real = os.path.realpath(source.path)
        self.loaded[real] = source.path
        self.sources[source.path] = source
        module, diagnostics = parse(source)
        self.diagnostics += diagnostics
        stack = stack + [(real, source.path)]
        for item in module.items:
            if isinstance(item, syntax.Import):
                self.follow(item, source.path, stack)
        self.modules.append(module)

    def follow(self, item: syntax.Import, importer: str, stack: list[tuple[str, str]]) -> None:
        """Resolve one import relative to the importing file, loading the file if new."""
        if not item.path or "\0" in item.path:
            self.diagnostics.append(Diagnostic(f"invalid file name in import: {item.path!r}",
                                               item.span))
            return
        path = os.path.normpath(os.path.join(os.path.dirname(importer), item.path))
        real = os.path.realpath(path)
        on_stack = [display for r, display in stack if r == real]
        if on_stack:
            start = [r for r, _ in stack].index(real)
            cycle = " -> ".join([d for _, d in stack[start:]] + [on_stack[0]])
            self.diagnostics.append(Diagnostic(f"import cycle: {cycle}", item.span))
            return
        if real in self.loaded:
            item.resolved_path = self.loaded[real]
            return
        source, diagnostics = read_source(path, at=self._string_span(item, importer))
        if not self.readable(source, diagnostics):
            self.diagnostics += [self._missing(d, item, path) for d in diagnostics]
            return
        item.resolved_path = source.path
        self.load(source, stack)

    def _string_span(self, item: syntax.Import, importer: str) -> Span:
        """The span of the quoted file name in an import, found in the source line."""
        span = item.span
        text = self.sources[importer].line_text(span.line)
        start = min((i for i in (text.find('"', span.col), text.find("'", span.col)) if i >= 0),
                    default=-1)
        if start < 0:
            return span
        end = text.find(text[start], start + 1)
        end = len(text) if end < 0 else end + 1
        return Span(span.file, span.line, start + 1, span.line, end + 1)

    @staticmethod
    def _missing(diagnostic: Diagnostic, item: syntax.Import, path: str) -> Diagnostic:
        """Name the import as written, and the resolved path, in a file-not-found error."""
        if diagnostic.message.startswith("cannot find file"):
            return Diagnostic(f"cannot find imported file '{item.path}' (looked for {path})",
                              diagnostic.span)
        return diagnostic


def compile_program(file: str | None = None, project: str | None = None) -> tuple[
        Any, list[Diagnostic], dict[str, SourceFile]]:
    """Load, parse and check a program given as an entry file or a project folder.

    Returns (CheckedProgram or None, diagnostics, sources by path); the program is None when
    there is any diagnostic (or when the checker is not installed yet)."""
    sources: dict[str, SourceFile] = {}
    project_dir = None
    if project is not None:
        loaded, diagnostics, config = _load_project(project)
        if config is not None:
            sources[config.path] = config
        if loaded is None:
            return None, diagnostics, sources
        file, project_dir = loaded.entry, os.path.normpath(project)
    assert file is not None
    modules, module_sources, diagnostics = load_modules(file)
    sources.update(module_sources)
    if diagnostics or not modules:
        return None, diagnostics, sources
    try:
        from svc.compiler.checker import check
    except ModuleNotFoundError as exc:
        if exc.name != "svc.compiler.checker":
            raise
        return None, [], sources  # parse-only until the checker exists
    program, diagnostics = check(modules, modules[-1].path)
    if diagnostics:
        return None, diagnostics, sources
    program.project_dir = project_dir
    return program, [], sources


def _load_project(directory: str) -> tuple[Any, list[Diagnostic], SourceFile | None]:
    """Read `svc.toml` of `directory`: (Project or None, diagnostics, the config source)."""
    from svc.project import config_path, load_project
    config, diagnostics = read_source(os.path.normpath(config_path(directory)))
    if config is None or diagnostics:
        return None, diagnostics, config
    project, diagnostics = load_project(directory, config)
    return project, diagnostics, config


# --- `svcc check` -------------------------------------------------------------------------------

def check_command(args: Any) -> int:
    """`svcc check FILE` / `svcc check --project DIR [--emit-python]`: 0 good, 1 errors,
    2 usage errors. Never a traceback: an internal failure is one `error:` line."""
    try:
        return _check(args)
    except BrokenPipeError:  # our reader is gone: svcc.cli ends quietly
        raise
    except Exception as exc:  # noqa: BLE001 - the last line of defence, see docstring
        print(f"error: internal compiler error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def _check(args: Any) -> int:
    usage = _usage_error(args.file, args.project)
    if usage:
        print(f"error: {usage}", file=sys.stderr)
        return 2
    program, diagnostics, sources = compile_program(file=args.file, project=args.project)
    if diagnostics:
        print_diagnostics(diagnostics, sources)
        return 1
    if program is None:  # only while svc.compiler.checker does not exist
        print(f"ok: {args.file or args.project} (parsed; the checker is not available)")
        return 0
    if getattr(args, "emit_python", False):
        return _emit_python(program)
    routes = len(program.routes)
    files = len(program.modules)
    print(f"ok: {program.entry} ({_plural(files, 'file')}, {_plural(routes, 'route')})")
    return 0


def _usage_error(file: str | None, project: str | None) -> str | None:
    """Problems with the command line itself (exit 2), before any compiling."""
    if project is not None:
        if not os.path.isdir(project):
            return f"project folder '{project}' does not exist"
        if not os.path.isfile(os.path.join(project, "svc.toml")):
            return f"no svc.toml in project folder '{project}'"
        return None
    if file is None:
        return "give a .svc file or --project DIR"
    if not os.path.exists(file):
        return f"cannot find file '{file}'"
    if not os.path.isfile(file):
        return f"'{file}' is not a file"
    if not os.access(file, os.R_OK):
        return f"cannot read '{file}': permission denied"
    return None


def print_diagnostics(diagnostics: list[Diagnostic], sources: dict[str, SourceFile]) -> None:
    """All diagnostics, sorted by file, line and column, then a one-line summary."""
    ordered = sorted(diagnostics, key=Diagnostic.sort_key)
    for diagnostic in ordered:
        print(render(diagnostic, sources.get(diagnostic.span.file)), file=sys.stderr)
        print(file=sys.stderr)
    files = sorted({d.span.file for d in ordered})
    where = files[0] if len(files) == 1 else f"{len(files)} files"
    print(f"error: {_plural(len(ordered), 'error')} in {where}", file=sys.stderr)


def _emit_python(program: Any) -> int:
    try:
        from svc.compiler.codegen import generate
    except ModuleNotFoundError as exc:
        if exc.name != "svc.compiler.codegen":
            raise
        print("error: --emit-python needs the code generator (svc.compiler.codegen), which "
              "is not available yet", file=sys.stderr)
        return 1
    for path, module in generate(program):
        print(f"# --- {path} ---")
        print(python_ast.unparse(module))
    return 0


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
