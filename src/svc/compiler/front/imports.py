"""Imports: the files of a program, read and parsed once each, in dependency order.

`load_modules(entry)` reads the entry file, parses it, and follows its `import` items depth
first, so the modules come back with every file's dependencies before it and the entry last.
Reading and parsing go together here because a file's imports are known only once it is
parsed.

Nothing here raises for bad input: an unreadable file, invalid UTF-8, a missing import or an
import cycle is a diagnostic like any other, placed at the import's file name where there is
one.
"""

from __future__ import annotations

import os
from typing import Mapping, TypeGuard

from svc.compiler.front import syntax
from svc.compiler.diagnostics import Diagnostic
from svc.compiler.front.parser import parse
from svc.compiler.source import SourceFile, Span


#: Texts that stand in for files on disk, by real path (`os.path.realpath`): an editor's
#: unsaved documents, so a language server checks what the user sees.
Overlay = Mapping[str, str]


def read_source(path: str, at: Span | None = None,
                overlay: Overlay | None = None) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Read and decode one file (or take its text from `overlay`). Problems are reported at
    `at` (an import's string), or at the file itself; invalid UTF-8 is reported at the first
    bad byte. A file that is not UTF-8 comes back with its diagnostic and a copy decoded with
    U+FFFD in place of the bad bytes: that copy is only for showing the line under the caret,
    never for parsing."""
    if overlay and os.path.realpath(path) in overlay:
        text = overlay[os.path.realpath(path)]
        return SourceFile(path, text[1:] if text.startswith("\ufeff") else text), []
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


#: How a test file's name ends (`svcc test`); a program's own files may not import one.
TEST_SUFFIX = "_test.svc"


def load_modules(entry: str, overlay: Overlay | None = None, tests: tuple[str, ...] = ()
                 ) -> tuple[list[syntax.Module], dict[str, SourceFile], list[Diagnostic]]:
    """Load and parse `entry` and, transitively, the files it imports (each once).

    Returns the modules in load order (dependencies first, entry last), the sources by path
    (for rendering diagnostics) and all diagnostics. An import cycle is reported at the import
    that closes it; a missing file at the import's string.

    `tests` (for `svcc test`) are more files loaded after the program, with what they import
    that the program does not: their modules come after the entry's, so a test file may import
    the entry file, and the program's own files load exactly as they do without tests."""
    loader = _Loader(overlay)
    all_diagnostics: list[Diagnostic] = []
    for path in (entry, *tests):
        source, diagnostics = read_source(os.path.normpath(path), overlay=overlay)
        all_diagnostics += diagnostics
        if (loader.readable(source, diagnostics)
                and os.path.realpath(source.path) not in loader.loaded):
            loader.load(source, [])
    return loader.modules, loader.sources, all_diagnostics + loader.diagnostics


class _Loader:
    def __init__(self, overlay: Overlay | None) -> None:
        self.overlay = overlay
        self.modules: list[syntax.Module] = []
        self.sources: dict[str, SourceFile] = {}
        self.diagnostics: list[Diagnostic] = []
        self.loaded: dict[str, str] = {}  # real path -> display path, once parsed

    def readable(self, source: SourceFile | None, diagnostics: list[Diagnostic]
                 ) -> TypeGuard[SourceFile]:
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
        if path.endswith(TEST_SUFFIX) and not importer.endswith(TEST_SUFFIX):
            self.diagnostics.append(Diagnostic(
                f"cannot import the test file '{item.path}': test files are compiled only by "
                "svcc test, and only test files may import them", item.span))
            return
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
        source, diagnostics = read_source(path, self._string_span(item, importer), self.overlay)
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
