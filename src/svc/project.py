"""Project folders: `svc.toml` names the entry file (and optionally the program's name).

    entry = "tasks.svc"     # required: the entry file, relative to the project folder
    name = "tasks"          # optional

Any other key, a value of the wrong type, a missing `entry` or malformed TOML is one clear
diagnostic pointing into `svc.toml` (the position of the key where it can be found).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass

from svc.compiler.diagnostics import Diagnostic
from svc.compiler.source import SourceFile, Span

CONFIG_NAME = "svc.toml"
KEYS = {"entry": "the entry .svc file, relative to the project folder",
        "name": "the program's name"}
_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


@dataclass
class Project:
    directory: str
    entry: str  # the entry file's path, joined to the project directory
    name: str | None = None


def config_path(directory: str) -> str:
    return os.path.join(directory, CONFIG_NAME)


def load_project(directory: str, source: SourceFile) -> tuple[Project | None, list[Diagnostic]]:
    """Read the already loaded `svc.toml` text of `directory` into a Project."""
    def error(message: str, line: int = 1, col: int = 1, width: int = 1) -> tuple:
        span = Span(source.path, line, col, line, col + max(1, width))
        return None, [Diagnostic(message, span)]

    try:
        data = tomllib.loads(source.text)
    except tomllib.TOMLDecodeError as exc:
        text = str(exc)
        position = _TOML_POSITION.search(text)
        if position is None:
            return error(f"invalid svc.toml: {text}")
        return error(f"invalid svc.toml: {text[:position.start()]}",
                     int(position.group(1)), int(position.group(2)))
    for key, value in data.items():
        line, col = _key_position(source, key)
        if key not in KEYS:
            return error(f"unknown key '{key}' in svc.toml (allowed: entry, name)",
                         line, col, len(key))
        if not isinstance(value, str):
            return error(f"'{key}' in svc.toml must be a string ({KEYS[key]}), got "
                         f"{_toml_type(value)}", line, col, len(key))
    if "entry" not in data:
        return error("svc.toml has no 'entry' key (write: entry = \"main.svc\")")
    entry = data["entry"]
    line, col = _key_position(source, "entry")
    if not entry.strip():
        return error("'entry' in svc.toml must name a .svc file", line, col, len("entry"))
    path = os.path.normpath(os.path.join(directory, entry))
    if not os.path.isfile(path):
        problem = "does not exist" if not os.path.exists(path) else "is not a file"
        return error(f"the entry file '{path}' named in svc.toml {problem}", line, col,
                     len("entry"))
    return Project(directory, path, data.get("name")), []


def _key_position(source: SourceFile, key: str) -> tuple[int, int]:
    """Where `key` is assigned or opened as a table in the TOML text (1, 1 if not found)."""
    pattern = re.compile(r"\s*(\[+\s*)?[\"']?" + re.escape(key) + r"[\"']?\s*(=|\]|\.)")
    for number, line in enumerate(source.lines, 1):
        m = pattern.match(line)
        if m:
            return number, line.index(key) + 1
    return 1, 1


def _toml_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return "a date or time"
