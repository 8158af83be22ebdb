"""The JSON Schemas of svc types and classes, as the server reads and writes their JSON: what
`svcc openapi` and `svcc asyncapi` put in their documents (`components.schemas`, each class
once, referred to by name), and which classes a document needs.

A class is a strict JSON object (every field required, no other field), each field's rules
(`@length`, `@range`, `@pattern`, `@one_of`) its schema's keywords; a generic class's use has a
component of its own (`Page.Task`). A WebSocket's `bytes` messages are binary, not base64.
"""

from __future__ import annotations

from typing import Any, Iterable

from svc.compiler.check.field_rules import field_rules
from svc.compiler.program import CheckedProgram
from svc.compiler.svctypes import (
    BOOL, BYTES, F64, HTML, I32, I64, STR, UNIT, ClassRef, EnumRef, EventsOf, ListOf, MapOf, Opt,
    ResponseOf, SocketOf, Type, View, held_type,
)
from svc.rules.contract import INT_RANGES
from svc.rules.field_rules import BYTES as COUNTS_BYTES, ITEMS, LENGTH, PATTERN, RANGE, Rule

#: Where a document's schemas are: a class's schema is `{"$ref": SCHEMAS + name}`.
SCHEMAS = "#/components/schemas/"


# --- types ----------------------------------------------------------------------------------------

def schema_of(t: Type) -> dict[str, Any]:
    """The JSON Schema of an svc type as the server reads and writes it."""
    if t in (I64, I32):
        low, high = INT_RANGES[t.name]
        return {"type": "integer", "format": "int64" if t == I64 else "int32",
                "minimum": low, "maximum": high}
    if t == F64:
        return {"type": "number", "format": "double"}
    if t == BOOL:
        return {"type": "boolean"}
    if t in (STR, HTML):
        return {"type": "string"}
    if t in (BYTES, View(BYTES)):
        return {"type": "string", "contentEncoding": "base64"}
    if t == UNIT:
        return {"type": "null"}
    if isinstance(t, ListOf):
        return {"type": "array", "items": schema_of(t.elem)}
    if isinstance(t, ClassRef):
        return {"$ref": SCHEMAS + component_name(t.name)}
    if isinstance(t, MapOf):  # a JSON object: any keys, values of one type
        return {"type": "object", "additionalProperties": schema_of(t.value)}
    if isinstance(t, EnumRef):  # a value is its member's name
        return {"type": "string", "enum": list(t.members)}
    if isinstance(t, Opt):
        return _nullable(schema_of(t.inner))
    return {}  # not reachable for a checked route: any value


def component_name(class_name: str) -> str:
    """A class's schema name: its own name; an instantiation of a generic class gets one of
    its own, its type arguments after dots (`Page[Task]` → `Page.Task`, `Pair[i64, str?]` →
    `Pair.i64.str-opt`). Component names may hold `.` and `-`, which svc names cannot, so no
    class's schema can have the name of an instantiation's."""
    if "[" not in class_name:
        return class_name
    return (class_name.replace(", ", ".").replace("[", ".").replace("]", "")
            .replace("?", "-opt"))


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`T?`: a type union with null (`type: [..., "null"]` where there is a plain type)."""
    kind = schema.get("type")
    if isinstance(kind, str) and "enum" in schema:  # an enum's null must be listed too
        return {**schema, "type": [kind, "null"], "enum": schema["enum"] + [None]}
    if isinstance(kind, str):
        return {**schema, "type": [kind, "null"]}
    return {"oneOf": [schema, {"type": "null"}]}


def socket_message_schema(t: Type) -> dict[str, Any]:
    """A WebSocket message's schema: `bytes` travel as binary messages, other types as text
    messages holding their JSON."""
    if t in (BYTES, View(BYTES)):
        return {"type": "string", "format": "binary"}
    return schema_of(t)


def class_schemas(program: CheckedProgram, classes: set[str]) -> dict[str, Any]:
    """The schema of each of `classes`, in the program's order: exactly its fields, all
    required, each with its rules."""
    schemas: dict[str, Any] = {}
    for name, info in program.classes.items():
        if name not in classes:
            continue
        rules = field_rules(info.decl)
        schemas[component_name(name)] = {
            "type": "object",
            "properties": {field: _with_rules(schema_of(t), rules.get(field, ()))
                           for field, t in info.fields},
            "required": [field for field, _ in info.fields],
            "additionalProperties": False,
        }
    return schemas


# --- which classes, and their rules -----------------------------------------------------------

def reached_classes(program: CheckedProgram, types: Iterable[Type]) -> set[str]:
    """The classes of `types`, and those they reach through fields and containers."""
    found: set[str] = set()
    pending = list(types)
    while pending:
        t = pending.pop()
        if isinstance(t, ClassRef) and t.name not in found and t.name in program.classes:
            found.add(t.name)
            pending += [ft for _, ft in program.classes[t.name].fields]
        pending += inner_types(t)
    return found


def inner_types(t: Type) -> list[Type]:
    """The types a value of `t` holds directly: a container's, a `Response[T]`'s body, the
    messages of an event stream or a WebSocket."""
    if isinstance(t, ResponseOf):
        return [t.body]
    if isinstance(t, EventsOf):
        return [t.message]
    if isinstance(t, SocketOf):
        return [t.incoming, t.outgoing]
    held = held_type(t)
    return [] if held is None else [held]


def _with_rules(schema: dict[str, Any], rules: tuple[Rule, ...]) -> dict[str, Any]:
    """A field's schema with its rules as JSON Schema keywords; on a `T?` field they apply to
    the value when present, as the keywords of a type do."""
    schema = dict(schema)
    for rule in rules:
        schema.update(_rule_keywords(rule, schema))
    return schema


def _rule_keywords(rule: Rule, schema: dict[str, Any]) -> dict[str, Any]:
    low, high = rule.args[0], rule.args[-1]
    if rule.name == LENGTH and rule.counts == ITEMS:
        return {"minItems": low, "maxItems": high}
    if rule.name == LENGTH and rule.counts == COUNTS_BYTES and "contentEncoding" in schema:
        return {"description": f"{low} to {high} bytes (decoded)"}
    if rule.name == LENGTH:
        return {"minLength": low, "maxLength": high, "description":
                f"{low} to {high} bytes: svc counts the UTF-8 bytes, not the characters"}
    if rule.name == RANGE:
        return {"minimum": low, "maximum": high}
    if rule.name == PATTERN:
        return {"pattern": f"^(?:{rule.args[0]})$"}
    values: list[Any] = list(rule.args)
    return {"enum": values + [None] if isinstance(schema.get("type"), list) else values}
