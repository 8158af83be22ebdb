"""svc.toml's `[dependencies]`: the Python packages a project asks for, as data.

    [dependencies]
    markdown = ">=3.5,<4"              # a PEP 440 version range ("*": any version)
    slugs = { path = "vendor/slugs" }   # a folder holding a Python project, relative to svc.toml

Names and ranges are checked with `packaging` (what pip itself uses), so a range svc accepts is
one pip understands. The table's digest is what `svc.lock` records: a lock belongs to exactly
the table it was made from (svc.dependencies.lock).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Mapping

from svc.rules.config_values import toml_type

#: What `name = "*"` means: any version.
ANY_VERSION = "*"


@dataclass(frozen=True)
class Dependency:
    """One entry of `[dependencies]`: a range from the package index, or a local folder."""

    name: str
    versions: str | None = None  # a PEP 440 range ("" for any), None for a path dependency
    path: str | None = None  # the folder as written (relative to the project)

    def requirement(self, project_dir: str) -> str:
        """What to give pip for this entry (ranges: `name>=1,<2`; folders: their path)."""
        if self.path is not None:
            return os.path.abspath(os.path.join(project_dir, self.path))
        return self.name + (self.versions or "")


def dependencies(table: Mapping[str, Any] | None) -> list[Dependency]:
    """The checked `[dependencies]` table as data, in svc.toml's order."""
    found = []
    for name, value in (table or {}).items():
        if isinstance(value, dict):
            found.append(Dependency(name, path=value["path"]))
        else:
            found.append(Dependency(name, "" if value.strip() == ANY_VERSION else value.strip()))
    return found


def digest(table: Mapping[str, Any] | None) -> str:
    """The table's fingerprint: sha256 of it as canonical JSON (key order and TOML spelling
    do not change it; any change of a name, range or path does)."""
    text = json.dumps(dict(table or {}), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def normalized(name: str) -> str:
    """A distribution name as pip compares them (`Foo_Bar` and `foo-bar` are one package)."""
    from packaging.utils import canonicalize_name  # only projects with dependencies pay

    return str(canonicalize_name(name))


def dependencies_problem(table: dict) -> tuple[str, str] | None:
    """(key, message) for the first `[dependencies]` entry that is not a valid package name
    with a version range or `{ path = "..." }`, or None."""
    for name, value in table.items():
        problem = _name_problem(name) or _value_problem(name, value)
        if problem:
            return name, problem
    return None


def _name_problem(name: str) -> str | None:
    if _is_valid_name(name):
        return None
    return (f"'{name}' in svc.toml [dependencies] is not a Python package name (letters, "
            "digits, '.', '-' and '_', starting and ending with a letter or digit)")


def _is_valid_name(name: str) -> bool:
    """PEP 508's rule for a distribution name."""
    stripped = name.replace("-", "").replace("_", "").replace(".", "")
    return bool(name) and stripped.isascii() and stripped.isalnum() \
        and name[0].isalnum() and name[-1].isalnum()


def _value_problem(name: str, value: object) -> str | None:
    """Why a `[dependencies]` value is wrong, or None."""
    if isinstance(value, str):
        return _range_problem(name, value)
    if isinstance(value, dict):
        return _path_problem(name, value)
    return (f"'{name}' in svc.toml [dependencies] must be a version range (\">=3.5,<4\", "
            f"\"*\" for any) or {{ path = \"folder\" }}, got {toml_type(value)}")


def _range_problem(name: str, value: str) -> str | None:
    if value.strip() == ANY_VERSION:
        return None
    # imported here: every svcc command reads svc.toml, few projects have dependencies
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        SpecifierSet(value)
    except InvalidSpecifier:
        return (f"'{name}' in svc.toml [dependencies] has an invalid version range "
                f"'{value}' (write e.g. \">=3.5,<4\", \"==1.2.0\" or \"*\" for any)")
    if not value.strip():
        return (f"'{name}' in svc.toml [dependencies] has an empty version range (write \"*\" "
                "for any version)")
    return None


def _path_problem(name: str, value: dict) -> str | None:
    if set(value) != {"path"} or not isinstance(value["path"], str) or not value["path"].strip():
        return (f"'{name}' in svc.toml [dependencies] must be {{ path = \"folder\" }} (a "
                "folder holding a Python project, relative to svc.toml), got "
                f"{{ {', '.join(sorted(value))} }}")
    return None
