"""What checking one function body needs from the whole program: `CheckContext`.

The checker works in two steps. `checker.py` looks at the program as a whole: it collects the
top-level definitions, decides which names each file may see and resolves the declared types.
The body checker (`body.py` on `calls.py` on `expressions.py`) then checks one function at a
time against those tables. `CheckContext` is everything the second step gets from the first:
the tables, where diagnostics go, and how names and written types resolve. Passing this, and
not the program-level checker itself, keeps the body checker's dependencies visible and the
modules free of an import cycle.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Callable, Iterable

from svc.compiler.diagnostics import Diagnostic
from svc.compiler.front import syntax
from svc.compiler.program import CheckedProgram
from svc.compiler.source import Span
from svc.compiler.svctypes import Type


@dataclass
class Definition:
    """A top-level class, function, constant or enum and the file that defines it."""

    kind: str  # "class", "function", "const" or "enum"
    decl: syntax.ClassDef | syntax.FunctionDef | syntax.ConstDef | syntax.EnumDef
    file: str


def suggest(name: str, candidates: Iterable[str]) -> str:
    """"; did you mean 'x'?" for the candidate closest to a misspelt `name`, else ""."""
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


@dataclass
class CheckContext:
    """The program's tables as the checker fills them, shared by every step of checking.

    `resolve_type(texpr, file)` is the checker's resolution of a written type (for `let x: T`
    and a builtin's type argument); it reports its own errors and returns UNKNOWN after one.
    """

    program: CheckedProgram
    definitions: dict[str, Definition]  # every top-level name → its definition
    visible: dict[str, set[str]]  # file → the top-level names it may use
    diagnostics: list[Diagnostic]  # in the order found; sorted when checking ends
    resolve_type: Callable[[syntax.TypeExpr, str], Type]

    def error(self, message: str, span: Span) -> None:
        self.diagnostics.append(Diagnostic(message, span))

    def refer(self, use: Span, definition: Span) -> None:
        """Record that the name at `use` refers to the one defined at `definition` (for
        editors: go to definition)."""
        self.program.references[use] = definition

    def lookup(self, name: str, file: str) -> Definition | None:
        """The definition `name` refers to in `file`, if it is visible there."""
        if name in self.visible.get(file, ()):
            return self.definitions.get(name)
        return None

    def not_visible_hint(self, name: str) -> str:
        """Why a defined name is unknown here: it lives in a file not imported."""
        d = self.definitions.get(name)
        if d is None:
            return ""
        return f" ('{name}' is defined in {d.file}, which is not imported here)"

    def field_types(self, class_name: str) -> list[Type]:
        """The field types of a class, in order ([] for a class not known)."""
        info = self.program.classes.get(class_name)
        return [t for _, t in info.fields] if info else []
