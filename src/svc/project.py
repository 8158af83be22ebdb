"""Project folders: `svc.toml` names the entry file (and optionally the program's name), and
holds the program's configuration and server switches.

    entry = "tasks.svc"     # required: the entry file, relative to the project folder
    name = "tasks"          # optional

    [config]                # optional: values for config[T]() (svc.rules.config_values)
    max_items = 100

    [server]                # optional
    demo_routes = false     # /stream and /ws off (default true)

    [cors]                  # optional: answers to browsers of other origins (svc.rules.traffic)
    [rate_limit]            # optional: a token bucket per client (svc.rules.traffic)
    [guard_limits.f]        # optional: a token bucket per value of the guard f (svc.rules.traffic)
    [route_limits."POST /login"]  # optional: a token bucket per client of one route (same)
    [proxies]               # optional: the proxies whose X-Forwarded-For is believed (same)
    [jobs]                  # optional: the job runner's poll interval and lease grace (svc.rules.settings)
    [migrations]            # optional: each database's folder of migration files
                            # (svc.compiler.sql.migration_files)
    [dependencies]          # optional: the project's Python packages (svc.dependencies.manifest)
    [python]                # optional: the threads of blocking @python functions (svc.rules.settings)

Any other key, a value of the wrong type, a missing `entry` or malformed TOML is one clear
diagnostic pointing into `svc.toml` (the position of the key where it can be found). So is a
`[config]` value that is not a string, integer, float or boolean, and a `[config]` key naming
a secret (secrets come from the environment only). Whether each `[config]` key is read by a
configuration class, and fits its field, is checked with the program (svc.pipeline).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field

from svc.compiler.diagnostics import Diagnostic
from svc.compiler.source import SourceFile, Span
from svc.compiler.sql.migration_files import migrations_problem
from svc.rules.config_values import SECRET_WORDS, env_name, is_secret, toml_type
from svc.dependencies.manifest import Dependency, dependencies, dependencies_problem
from svc.rules.settings import TABLES, Settings, jobs_problem, python_problem
from svc.rules.traffic import (
    cors_problem, guard_limits_problem, proxies_clash, proxies_problem, rate_limit_problem,
    route_limits_problem,
)

CONFIG_NAME = "svc.toml"
KEYS = {"entry": "the entry .svc file, relative to the project folder",
        "name": "the program's name"}
#: The keys of `[server]`, each a boolean.
SERVER_KEYS = {"demo_routes": "whether the demonstration routes /stream and /ws are served"}
_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_ASSIGNED_KEY = re.compile(r"\s*([\w.\"' -]+?)\s*=")


@dataclass
class Project:
    directory: str
    entry: str  # the entry file's path, joined to the project directory
    name: str | None = None
    #: svc.toml's tables, checked, as the program's settings
    settings: Settings = field(default_factory=Settings)
    #: `[migrations]`: each declared dialect's folder, as written (relative to `directory`)
    migrations: dict[str, str] = field(default_factory=dict)
    #: `[dependencies]`: the Python packages `svcc install` installs, in svc.toml's order
    dependencies: list[Dependency] = field(default_factory=list)
    #: `[dependencies]` as written (its digest ties svc.lock to it); None without the table
    dependencies_table: dict | None = None

    @property
    def config(self) -> dict[str, object]:
        """`[config]`: TOML scalars ({} without the table)."""
        return dict(self.settings.config or {})


def config_path(directory: str) -> str:
    return os.path.join(directory, CONFIG_NAME)


def load_project(directory: str, source: SourceFile) -> tuple[Project | None, list[Diagnostic]]:
    """Read the already loaded `svc.toml` text of `directory` into a Project."""
    def error(message: str, line: int = 1, col: int = 1, width: int = 1,
              shows_source: bool = True) -> tuple:
        span = Span(source.path, line, col, line, col + max(1, width))
        return None, [Diagnostic(message, span, shows_source)]

    try:
        data = tomllib.loads(source.text)
    except tomllib.TOMLDecodeError as exc:
        text = str(exc)
        position = _TOML_POSITION.search(text)
        if position is None:
            return error(f"invalid svc.toml: {text}")
        line = int(position.group(1))
        return error(f"invalid svc.toml: {text[:position.start()]}", line,
                     int(position.group(2)), shows_source=not _assigns_secret(source, line))
    for key, value in data.items():
        line, col = _key_position(source, key)
        if key == "migrations":
            if not isinstance(value, dict):
                return error("'migrations' in svc.toml must be a table ([migrations]), got "
                             f"{_toml_type(value)}", line, col, len(key))
            found = migrations_problem(value)
            if found is not None:
                line, col = _table_key_position(source, key, found[0])
                return error(found[1], line, col, len(found[0]))
            continue
        if key in TABLES:
            if not isinstance(value, dict):
                return error(f"'{key}' in svc.toml must be a table ([{key}]), got "
                             f"{_toml_type(value)}", line, col, len(key))
            found = _TABLE_CHECKS[key](value)
            if found is not None:
                bad_key, message = found
                line, col = _table_key_position(source, key, bad_key)
                if key in LIMIT_TABLES:  # `name` or `name.key` (`route\0key`): under [table.name]
                    name, _, inner = bad_key.partition(LIMIT_TABLES[key])
                    bad_key = inner or name
                    line, col = limit_position(source, key, name, bad_key)
                    if key == "route_limits" and not inner:
                        bad_key = f'"{name}"'  # the width of its quoted name
                # the line of a secret holds its value: the position says where it is
                return error(message, line, col, len(bad_key), not is_secret(bad_key))
            continue
        if key not in KEYS:
            return error(f"unknown key '{key}' in svc.toml (allowed: entry, name, [config], "
                         "[server], [cors], [rate_limit], [guard_limits], [route_limits], "
                         "[proxies], [jobs], [migrations], [dependencies], [python])",
                         line, col, len(key))
        if not isinstance(value, str):
            return error(f"'{key}' in svc.toml must be a string ({KEYS[key]}), got "
                         f"{_toml_type(value)}", line, col, len(key))
    clash = proxies_clash(data)
    if clash is not None:
        line, col = _table_key_position(source, "rate_limit", "client")
        return error(clash, line, col, len("client"))
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
    return Project(directory, path, data.get("name"), Settings.from_tables(data),
                   dict(data.get("migrations", {})), dependencies(data.get("dependencies")),
                   data.get("dependencies")), []


def _assigns_secret(source: SourceFile, line: int) -> bool:
    """Whether that line of the TOML text assigns a key named like a secret (its value must
    not be printed, even when the line does not parse)."""
    m = _ASSIGNED_KEY.match(source.line_text(line)) if 1 <= line <= len(source.lines) else None
    return m is not None and is_secret(m.group(1).rpartition(".")[2].strip("\"' "))


def _config_problem(table: dict) -> tuple[str, str] | None:
    """(key, message) for the first `[config]` entry svc.toml may not hold, or None."""
    for key, value in table.items():
        if is_secret(key):
            return key, (f"'{key}' in svc.toml [config] is a secret (its name's last word is "
                         f"{', '.join(SECRET_WORDS[:-1])} or {SECRET_WORDS[-1]}): secrets come "
                         f"from the environment only; set {env_name(key)} there and remove it "
                         "here")
        if not isinstance(value, (str, int, float, bool)):
            return key, (f"'{key}' in svc.toml [config] must be a string, integer, float or "
                         f"boolean (what a config[T] field reads), got {toml_type(value)}")
    return None


def _server_problem(table: dict) -> tuple[str, str] | None:
    """(key, message) for the first `[server]` entry that is unknown or not a boolean."""
    for key, value in table.items():
        if key not in SERVER_KEYS:
            return key, (f"unknown key '{key}' in svc.toml [server] (allowed: "
                         f"{', '.join(SERVER_KEYS)})")
        if not isinstance(value, bool):
            return key, (f"'{key}' in svc.toml [server] must be true or false "
                         f"({SERVER_KEYS[key]}), got {toml_type(value)}")
    return None


_TABLE_CHECKS = {"config": _config_problem, "server": _server_problem,
                 "cors": cors_problem, "rate_limit": rate_limit_problem,
                 "guard_limits": guard_limits_problem, "route_limits": route_limits_problem,
                 "proxies": proxies_problem, "jobs": jobs_problem,
                 "dependencies": dependencies_problem, "python": python_problem}
#: The tables of one inner table per name, and how their checks join a name and its key.
LIMIT_TABLES = {"guard_limits": ".", "route_limits": "\0"}


def limit_position(source: SourceFile, table: str, name: str, key: str) -> tuple[int, int]:
    """Where `key` of `[table.<name>]` (`[guard_limits.f]`, `[route_limits."POST /login"]`)
    is written; for the name itself, its header, or `<name> = ...` under `[table]`."""
    spellings = [name] if table == "guard_limits" else [f'"{name}"', f"'{name}'"]
    for spelled in spellings:
        inner = f"{table}.{spelled}"
        if key != name:
            found = _table_key_position(source, inner, key)
        else:
            found = _key_position(source, inner)
            found = found if found == (1, 1) else (found[0], found[1] + len(table) + 1)
        if found != (1, 1):
            return found
    line, col = _table_key_position(source, table, name)
    quoted = col > 1 and source.line_text(line)[col - 2:col - 1] in ("'", '"')
    return line, col - 1 if quoted else col  # at its opening quote, as in a header


def table_position(source: SourceFile, table: str) -> tuple[int, int]:
    """Where table `table` is opened (or its first dotted key written); 1, 1 if nowhere."""
    return _key_position(source, table)


def migrations_key_position(source: SourceFile, dialect: str) -> tuple[int, int]:
    """Where `[migrations]`'s key `dialect` is written."""
    return _table_key_position(source, "migrations", dialect)


def config_key_position(source: SourceFile, key: str) -> tuple[int, int]:
    """Where key `key` of `[config]` is written (for the checks made with the program)."""
    return _table_key_position(source, "config", key)


def _table_key_position(source: SourceFile, table: str, key: str) -> tuple[int, int]:
    """Where `key` of table `table` is written: after the `[table]` header (up to the next
    header), or as a dotted `table.key`; else where the table is opened; else 1, 1."""
    header = re.compile(r"\s*\[\s*[\"']?" + re.escape(table) + r"[\"']?\s*\]")
    assignment = re.compile(r"\s*[\"']?" + re.escape(key) + r"[\"']?\s*=")
    dotted = re.compile(r"\s*[\"']?" + re.escape(table) + r"[\"']?\s*\.\s*[\"']?"
                        + re.escape(key) + r"[\"']?\s*=")
    inside = False
    for number, line in enumerate(source.lines, 1):
        if header.match(line):
            inside = True
            continue
        if line.lstrip().startswith("["):
            inside = False
        if inside and assignment.match(line):
            return number, line.index(key) + 1
        if dotted.match(line):
            return number, line.index(key, line.index(table) + len(table)) + 1
    return _key_position(source, table)


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
