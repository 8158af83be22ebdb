"""Field rules at run time: every rule of a decoded value, every failure named by its path.

A class with rules carries them as `__svc_rules__` (generated code: `(attribute, JSON name,
rules)` per field, each rule a `svc.rules.field_rules.Rule` tuple). `checker_of(tp)` builds,
once per type, the check of a request body's or `json_decode[T]`'s type: it follows the
fields, list elements, map values and optional values that lead to a class with rules, and is
None when nothing does, so a program without rules pays nothing per request.

The check returns every failure, `{"title": "must be 1 to 240 bytes long", "items[2].qty":
"must be between 1 and 100"}`, in field order, the first failing rule of each field
(docs/reference/language.md, "Field rules").
"""

from __future__ import annotations

import json
from typing import Any, Callable

import msgspec.inspect as mi

from svc.rules.field_rules import Rule, message, test_of

#: What the 422 of a body whose fields break their rules says (the `fields` say which).
NOT_ACCEPTABLE = "the request's fields are not acceptable"

#: `walk(value, path, failures)`: adds the failures inside `value`, whose path is `path`.
Walk = Callable[[Any, str, dict], None]

_checkers: dict[Any, Callable[[Any], dict] | None] = {}


def checker_of(tp: Any) -> Callable[[Any], dict] | None:
    """`check(value)` → the failures (empty when every rule holds), or None when no rule
    applies anywhere in `tp` (built once per type)."""
    if tp in _checkers:
        return _checkers[tp]
    info = mi.type_info(tp)
    walk = _walker(info, {}) if _has_rules(info, set()) else None
    found = None if walk is None else _checker(walk)
    _checkers[tp] = found
    return found


def _checker(walk: Walk) -> Callable[[Any], dict]:
    def check(value: Any) -> dict:
        failures: dict[str, str] = {}
        if value is not None:  # `json_decode[T?]` of `null`
            walk(value, "", failures)
        return failures
    return check


def _own_rules(cls: type) -> dict[str, list[tuple[Callable[[Any], bool], str]]]:
    """The class's own rules by attribute: a (test, message) per rule, in written order."""
    return {attr: [(test_of(Rule(*r)), message(Rule(*r))) for r in rules]
            for attr, _, rules in getattr(cls, "__svc_rules__", ())}


def _inside(info: Any) -> list[Any]:
    """The types directly inside a type (a list's element, a map's value, a union's members,
    a class's fields)."""
    if isinstance(info, mi.StructType):
        return [f.type for f in info.fields]
    if isinstance(info, mi.ListType):
        return [info.item_type]
    if isinstance(info, mi.DictType):
        return [info.value_type]
    if isinstance(info, mi.UnionType):
        return list(info.types)
    return []


def _has_rules(info: Any, seen: set[int]) -> bool:
    """Whether a class with rules is reachable from `info` (classes may refer to themselves)."""
    if isinstance(info, mi.StructType):
        if id(info.cls) in seen:
            return False
        seen.add(id(info.cls))
        if getattr(info.cls, "__svc_rules__", None):
            return True
    return any(_has_rules(inner, seen) for inner in _inside(info))


def _walker(info: Any, classes: dict[type, Walk]) -> Walk | None:
    """The walk of a type that leads to rules, None for one that does not."""
    if not _has_rules(info, set()):
        return None
    if isinstance(info, mi.StructType):
        return classes.get(info.cls) or _class_walker(info, classes)
    if isinstance(info, mi.ListType):
        return _list_walker(_walker(info.item_type, classes))
    if isinstance(info, mi.DictType):
        return _map_walker(_walker(info.value_type, classes))
    if isinstance(info, mi.UnionType):  # `T?`: T's walk, on a value that is not None
        return next(w for w in (_walker(t, classes) for t in info.types) if w is not None)
    return None


def _class_walker(info: Any, classes: dict[type, Walk]) -> Walk:
    parts: list[tuple[str, str, list, Walk | None]] = []

    def walk(value: Any, path: str, failures: dict) -> None:
        for attr, name, tests, inner in parts:
            v = getattr(value, attr)
            if v is None:  # an absent `T?` (no other field is ever None)
                continue
            where = f"{path}.{name}" if path else name
            for test, text in tests:
                if not test(v):
                    failures[where] = text
                    break
            if inner is not None:
                inner(v, where, failures)

    classes[info.cls] = walk  # before its fields: a field may lead back to the class
    own = _own_rules(info.cls)
    for f in info.fields:
        tests = own.get(f.name, [])
        inner = _walker(f.type, classes)
        if tests or inner is not None:
            parts.append((f.name, f.encode_name, tests, inner))
    return walk


def _list_walker(item: Walk | None) -> Walk | None:
    if item is None:
        return None

    def walk(value: Any, path: str, failures: dict) -> None:
        for i, v in enumerate(value):
            if v is not None:
                item(v, f"{path}[{i}]", failures)
    return walk


def _map_walker(item: Walk | None) -> Walk | None:
    if item is None:
        return None

    def walk(value: Any, path: str, failures: dict) -> None:
        for key, v in value.items():
            if v is not None:
                item(v, f"{path}[{json.dumps(key, ensure_ascii=False)}]", failures)
    return walk
