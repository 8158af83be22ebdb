"""`config[T]()`: the program's typed configuration, read once when the program starts.

The entry module of a program that calls `config[T]()` anywhere defines `_svc_CONFIG`, made by
the code generator: the `[config]` table of `svc.toml` (None without one) and, for each class
used as a `T`, the class, its name and its fields' `FieldSpec`s (svc.rules.config_values). Before
`main` runs (`svcc run`, a built executable) or a test runs (`svcc test`), `load` reads every
field of every such class, from the environment first, then the table (svc.rules.config_values has
the rules), and keeps the values; any problem is one line naming the key and where the value
came from, and the program does not start. So `config[T]()` itself cannot fail: it builds a
fresh instance of the values read at start (a class instance can be changed; a caller's
change is its own).

No value that came from the environment appears in a message: it may be a secret.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from svc.rules.config_values import FieldSpec, env_name, from_env, from_toml, is_secret
from svc.runtime.lib.support import SvcFault

#: The generated `_svc_CONFIG`: (the [config] table or None, ((class, name, fields), ...)).
ConfigTable = tuple[dict[str, Any] | None, tuple[tuple[type, str, tuple[FieldSpec, ...]], ...]]

# class → the values of its fields, in declaration order, read at start.
_values: dict[type, tuple] = {}


def load(config: ConfigTable, environ: Mapping[str, str] | None = None) -> list[str]:
    """Read the configuration of every class in `config` and keep it; the problems found,
    one line each (without `error: `), in class and field order; [] when all is well."""
    table, classes = config
    environ = os.environ if environ is None else environ
    problems: list[str] = []
    read: dict[type, tuple] = {}
    for cls, class_name, fields in classes:
        values = []
        for spec in fields:
            ok, value = _field(spec, class_name, table, environ)
            if ok:
                values.append(value)
            else:
                problems.append(str(value))
        read[cls] = tuple(values)
    if not problems:
        _values.update(read)
    return problems


def _field(spec: FieldSpec, class_name: str, table: dict[str, Any] | None,
           environ: Mapping[str, str]) -> tuple[bool, object]:
    """(True, the value) of one field, or (False, the problem)."""
    name, kind, optional, members = spec
    shown = f"{class_name}.{name}"
    variable = env_name(name)
    text = environ.get(variable)
    if text is not None:
        ok, value = from_env(text, kind, members)
        if ok:
            return True, value
        return False, (f"config: {variable} (the environment variable for {shown}) must be "
                       f"{value}; its value is not shown")
    if table is not None and name in table:
        ok, value = from_toml(table[name], kind, members)
        if ok:
            return True, value
        return False, f"config: '{name}' in svc.toml [config] (for {shown}) must be {value}"
    if optional:
        return True, None
    where = f"the environment variable {variable}"
    if is_secret(name):
        where += " (a secret: never in svc.toml)"
    elif table is not None:
        where += f", or '{name}' in svc.toml [config]"
    return False, f"config: no value for {shown}: set {where}"


def config(cls: type) -> Any:
    """`config[T]()`: a new instance of `cls` holding the values read at start."""
    values = _values.get(cls)
    if values is None:  # the runner loads every class the program uses before it runs
        raise SvcFault(f"config[{getattr(cls, '__name__', cls)}]() before the configuration "
                       "was read")
    return cls(*values)
