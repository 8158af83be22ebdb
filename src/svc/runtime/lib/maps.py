"""The builtins on `Map[str, T]` values, which are Python dicts (insertion ordered, as
`keys` and iteration promise). Generated code imports this module only where it uses a map
builtin."""

from __future__ import annotations


def get(m: dict, key: str) -> object:
    """`get(m, key)`: the value, or None (a Map's values are never None, so None means the
    key is missing)."""
    return m.get(key)


def set_(m: dict, key: str, value: object) -> None:
    """`set(m, key, value)`: a new key goes last; an existing key keeps its place."""
    m[key] = value


def keys(m: dict) -> list:
    """`keys(m)`: a new list, so changing the map later does not change it."""
    return list(m)
