"""`svcc lsp`: the svc language server, over stdio, on pygls.

It translates between the Language Server Protocol and the compiler: `lsp_analysis` checks
the program an open file belongs to (with the editor's unsaved texts), `lsp_index` answers
questions about the checked program. Checks are debounced: a burst of keystrokes costs one
check, run `DEBOUNCE_SECONDS` after the last change (or at once when a request needs the
current text). Nothing a document holds may stop the server: a failure while checking is
logged to the editor and the last good answers stay.
"""

from __future__ import annotations

import asyncio
import gc
import os
import traceback
from collections.abc import Sequence
from typing import Any, Callable

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from svc import __version__
from svc.compiler.diagnostics import Diagnostic
from svc.compiler.front.layout import format_text
from svc.compiler.front.parser import parse
from svc.compiler.source import SourceFile, Span
from svc.tools import lsp_index
from svc.compiler.sql.schemas import Schemas
from svc.tools.lsp_analysis import Analysis, analyse_file

DEBOUNCE_SECONDS = 0.15

_COMPLETION_KINDS = {
    "variable": lsp.CompletionItemKind.Variable, "function": lsp.CompletionItemKind.Function,
    "class": lsp.CompletionItemKind.Class, "builtin": lsp.CompletionItemKind.Function,
    "type": lsp.CompletionItemKind.TypeParameter, "keyword": lsp.CompletionItemKind.Keyword,
    "field": lsp.CompletionItemKind.Field, "constant": lsp.CompletionItemKind.Constant,
    "enum": lsp.CompletionItemKind.Enum, "enum_member": lsp.CompletionItemKind.EnumMember,
}
_SYMBOL_KINDS = {
    "class": lsp.SymbolKind.Class, "field": lsp.SymbolKind.Field,
    "function": lsp.SymbolKind.Function, "route": lsp.SymbolKind.Event,
    "job": lsp.SymbolKind.Event, "schedule": lsp.SymbolKind.Event,
    "guard": lsp.SymbolKind.Event,
    "constant": lsp.SymbolKind.Constant, "enum": lsp.SymbolKind.Enum,
    "enum_member": lsp.SymbolKind.EnumMember,
}


class SvcServer(LanguageServer):
    """The server's state: the last analysis of each open document's program, the pending
    (debounced) checks and the URIs diagnostics were published for."""

    def __init__(self) -> None:
        super().__init__("svcc-lsp", __version__,
                         text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.analyses: dict[str, Analysis] = {}  # open document path -> its program
        self.last_program: dict[str, Any] = {}  # path -> last CheckedProgram that read it
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.published: dict[str, set[str]] = {}  # program key -> paths with diagnostics
        # The schemas the programs' SQL is checked in, open while the server runs: SQLite's
        # fully, PostgreSQL's by its parser (a private cluster held for the editor's whole
        # session would make a `svcc check` in a terminal wait for its lock)
        self.schemas = Schemas(postgres="syntax")

    # --- documents ------------------------------------------------------------------------

    def overlay(self) -> dict[str, str]:
        """The open documents' texts, by real path: what the pipeline reads before disk."""
        texts = {}
        for uri, doc in self.workspace.text_documents.items():
            path = to_fs_path(uri)
            if path:
                texts[os.path.realpath(path)] = doc.source
        return texts

    def schedule(self, uri: str) -> None:
        """Check `uri`'s program once the edits pause."""
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        loop = asyncio.get_event_loop()
        self.pending[uri] = loop.call_later(DEBOUNCE_SECONDS, self.check_now, uri)

    def fresh(self, uri: str) -> Analysis | None:
        """The analysis of `uri`'s program, checking first if an edit is pending."""
        if uri in self.pending:
            self.check_now(uri)
        path = to_fs_path(uri)
        return self.analyses.get(os.path.abspath(path)) if path else None

    def check_now(self, uri: str) -> None:
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        path = to_fs_path(uri)
        if not path:
            return
        path = os.path.abspath(path)
        try:
            others = [a for p, a in self.analyses.items() if p != path]
            root = self.workspace.root_path
            analysis = analyse_file(path, self.overlay(), others, root, self.schemas)
        except Exception:  # noqa: BLE001 - a bug of ours must not end the editor's server
            self.window_log_message(lsp.LogMessageParams(
                lsp.MessageType.Error, f"svcc lsp: checking {path} failed:\n"
                f"{traceback.format_exc()}"))
            return
        self.analyses[path] = analysis
        if analysis.program is not None:
            for file in analysis.files:
                self.last_program[file] = analysis.program
        self.publish(analysis)

    def publish(self, analysis: Analysis) -> None:
        """Every file of the program gets its diagnostics (an empty list clears old ones),
        and files this program reported on before but no longer reads are cleared."""
        key = str(analysis.target)
        files = analysis.files | set(analysis.diagnostics)
        for path in sorted(files):
            found = analysis.diagnostics.get(path, [])
            lines = self.lines_of(path, analysis.sources.get(path)) if found else []
            diagnostics = [self.diagnostic(d, lines) for d in found]
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
                uri=from_fs_path(path) or path, diagnostics=diagnostics))
        for path in self.published.get(key, set()) - files:
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
                uri=from_fs_path(path) or path, diagnostics=[]))
        self.published[key] = files

    # --- positions ------------------------------------------------------------------------

    def lines_of(self, path: str, source: SourceFile | None = None) -> Sequence[str]:
        uri = from_fs_path(path) or path
        if uri in self.workspace.text_documents:
            return self.workspace.get_text_document(uri).lines
        return [line + "\n" for line in source.lines] if source else []

    def to_range(self, span: Span, source: SourceFile | None = None,
                 lines: Sequence[str] | None = None) -> lsp.Range:
        """A span (1-based characters) as an LSP range (0-based, in the client's units);
        `lines` (the file's, when known) saves splitting a long document again."""
        if lines is None:
            lines = self.lines_of(os.path.abspath(span.file), source)
        start = lsp.Position(max(0, span.line - 1), max(0, span.col - 1))
        end = lsp.Position(max(0, span.end_line - 1), max(0, span.end_col - 1))
        codec = self.workspace.position_codec
        return codec.range_to_client_units(lines, lsp.Range(start, end))

    def from_position(self, uri: str, position: lsp.Position) -> tuple[int, int]:
        """An LSP position as the (line, column) of a Span."""
        doc = self.workspace.get_text_document(uri)
        server = self.workspace.position_codec.position_from_client_units(doc.lines, position)
        return server.line + 1, server.character + 1

    def diagnostic(self, d: Diagnostic, lines: Sequence[str]) -> lsp.Diagnostic:
        return lsp.Diagnostic(range=self.to_range(d.span, lines=lines), message=d.message,
                              severity=lsp.DiagnosticSeverity.Error, source="svcc")

    def location(self, span: Span, analysis: Analysis | None) -> lsp.Location:
        path = os.path.abspath(span.file)
        source = analysis.sources.get(path) if analysis else None
        return lsp.Location(uri=from_fs_path(path) or path, range=self.to_range(span, source))

    def program_for(self, uri: str):
        """The freshest checked program that read this document, and its analysis."""
        analysis = self.fresh(uri)
        path = os.path.abspath(to_fs_path(uri) or "")
        program = analysis.program if analysis and analysis.program else None
        return program or self.last_program.get(path), analysis, path


def _guard(default: Any) -> Callable:
    """A request handler that fails answers `default` and logs, instead of an error reply
    the editor would show on every keystroke."""
    def wrap(handler: Callable) -> Callable:
        def guarded(server: SvcServer, params: Any) -> Any:
            try:
                return handler(server, params)
            except Exception:  # noqa: BLE001 - see docstring
                server.window_log_message(lsp.LogMessageParams(
                    lsp.MessageType.Error, f"svcc lsp: {handler.__name__} failed:\n"
                    f"{traceback.format_exc()}"))
                return default
        guarded.__name__ = handler.__name__
        return guarded
    return wrap


def build_server() -> SvcServer:
    server = SvcServer()

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: SvcServer, params: None) -> None:
        ls.schemas.close()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: SvcServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.check_now(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: SvcServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: SvcServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)  # an include_text file may have changed too

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: SvcServer, params: lsp.DidCloseTextDocumentParams) -> None:
        path = os.path.abspath(to_fs_path(params.text_document.uri) or "")
        handle = ls.pending.pop(params.text_document.uri, None)
        if handle is not None:
            handle.cancel()
        ls.analyses.pop(path, None)
        gc.unfreeze()  # see lsp_analysis.analyse: let the collector see everything again
        gc.collect()

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    @_guard(None)
    def definition(ls: SvcServer, params: lsp.DefinitionParams) -> lsp.Location | None:
        program, analysis, path = ls.program_for(params.text_document.uri)
        if program is None:
            return None
        line, col = ls.from_position(params.text_document.uri, params.position)
        target = lsp_index.definition_at(program, path, line, col)
        return ls.location(target, analysis) if target else None

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    @_guard(None)
    def hover(ls: SvcServer, params: lsp.HoverParams) -> lsp.Hover | None:
        program, analysis, path = ls.program_for(params.text_document.uri)
        if program is None:
            return None
        line, col = ls.from_position(params.text_document.uri, params.position)
        found = lsp_index.hover_at(program, path, line, col)
        if found is None:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(lsp.MarkupKind.Markdown, found.text),
                         range=ls.to_range(found.span))

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                    lsp.CompletionOptions(trigger_characters=["."]))
    @_guard([])
    def completion(ls: SvcServer, params: lsp.CompletionParams) -> list[lsp.CompletionItem]:
        uri = params.text_document.uri
        program, _, path = ls.program_for(uri)
        line, col = ls.from_position(uri, params.position)
        lines = ls.workspace.get_text_document(uri).lines
        text = lines[line - 1].rstrip("\r\n") if line <= len(lines) else ""
        return [lsp.CompletionItem(label=c.label, kind=_COMPLETION_KINDS[c.kind],
                                   detail=c.detail)
                for c in lsp_index.completions_at(program, path, line, col, text)]

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @_guard([])
    def document_symbol(ls: SvcServer,
                        params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
        uri = params.text_document.uri
        program, analysis, path = ls.program_for(uri)
        doc = ls.workspace.get_text_document(uri)
        module, _ = parse(SourceFile(path, doc.source))  # this text, even if it has errors
        return [_symbol(ls, s) for s in lsp_index.symbols(module, program)]

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    @_guard([])
    def formatting(ls: SvcServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit]:
        """`svcc fmt` on the editor's text: one edit replacing the whole document, none when
        it is already in the layout or does not parse (its diagnostics say why)."""
        doc = ls.workspace.get_text_document(params.text_document.uri)
        text, _ = format_text(doc.path, doc.source)
        if text is None or text == doc.source:
            return []
        return [lsp.TextEdit(range=_whole(ls, doc.lines), new_text=text)]

    return server


def _whole(ls: SvcServer, lines: Sequence[str]) -> lsp.Range:
    """The range of a whole document, to its very end, in the client's units."""
    if not lines or lines[-1].endswith(("\n", "\r")):
        end = lsp.Position(len(lines), 0)
    else:
        end = lsp.Position(len(lines) - 1, len(lines[-1]))
    codec = ls.workspace.position_codec
    return codec.range_to_client_units(lines, lsp.Range(lsp.Position(0, 0), end))


def _symbol(ls: SvcServer, s: lsp_index.Symbol) -> lsp.DocumentSymbol:
    full = s.span.to(s.name_span) if (s.name_span.end_line, s.name_span.end_col) > (
        s.span.end_line, s.span.end_col) else s.span
    return lsp.DocumentSymbol(name=s.name, kind=_SYMBOL_KINDS[s.kind], detail=s.detail,
                              range=ls.to_range(full), selection_range=ls.to_range(s.name_span),
                              children=[_symbol(ls, c) for c in s.children] or None)


def serve_stdio() -> int:
    """Run the server on stdin/stdout until the client says exit."""
    build_server().start_io()
    return 0
