"""`svcc openapi` and field rules: each rule is its field's schema keywords, a route whose body
has rules lists the 422 binding answers, and only the classes the routes expose are
components (never a config class or a row class no route reads or answers). The documents
must still be valid OpenAPI 3.1."""

from __future__ import annotations

from pathlib import Path

from openapi_spec_validator import validate

from tests.helpers.openapi_check import openapi_document

PROGRAM = "tests/e2e/programs/field_rules.svc"
SCHEMAS = "#/components/schemas/"

EXPOSED = """\
class AppConfig:
    webhook_secret: str

class UserRow:
    id: i64
    password_hash: str

class Tag:
    name: str

class Note:
    @length(1, 10)
    text: str
    tags: List[Tag]

class Stats:
    count: i64

class Page[T]:
    items: List[T]

class Unused:
    x: i64

@post("/notes")
async def create(db: Db, n: Note) -> Result[Page[Note], Error]:
    let row: UserRow? = try await db_one[UserRow](db, "SELECT 1 AS id, 'x' AS password_hash")
    return ok(Page[Note](items=[n]))

@get("/stats")
async def stats() -> Result[Response[Stats], Error]:
    return ok(respond(200, Stats(count=len(config[AppConfig]().webhook_secret))))

async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    return await serve(db, 8080)
"""


def test_rules_are_the_fields_schema_keywords() -> None:
    document = openapi_document([PROGRAM])
    validate(document)
    schemas = document["components"]["schemas"]
    order, line = schemas["Order"]["properties"], schemas["Line"]["properties"]
    assert order["title"] == {
        "type": "string", "minLength": 1, "maxLength": 240,
        "description": "1 to 240 bytes: svc counts the UTF-8 bytes, not the characters"}
    assert order["code"] == {"type": ["string", "null"], "pattern": "^(?:[A-Z]{3})$"}
    assert order["lines"] == {"type": "array", "items": {"$ref": SCHEMAS + "Line"},
                              "minItems": 1, "maxItems": 3}
    assert order["discount"] == {"type": "number", "format": "double",
                                 "minimum": 0.0, "maximum": 1.0}
    assert order["priority"]["enum"] == [1, 2, 3]
    assert line["qty"] == {"type": "integer", "format": "int64", "minimum": 1, "maximum": 100}
    assert line["unit"] == {"type": "string", "enum": ["kg", "g"]}
    assert "Plain" in schemas


def test_a_route_whose_body_has_rules_lists_the_422() -> None:
    paths = openapi_document([PROGRAM])["paths"]
    assert paths["/orders"]["post"]["responses"]["422"] == {
        "$ref": "#/components/responses/UnprocessableContent"}
    assert "422" not in paths["/plain"]["post"]["responses"]  # its class has no rule
    assert "422" not in paths["/decode"]["post"]["responses"]  # a raw body


def test_only_the_classes_the_routes_expose_are_published(tmp_path: Path) -> None:
    (tmp_path / "app.svc").write_text(EXPOSED)
    document = openapi_document([str(tmp_path / "app.svc")])
    validate(document)
    schemas = set(document["components"]["schemas"])
    assert schemas == {"Note", "Tag", "Page.Note", "Stats", "Error", "Error.fields"}
    assert "webhook_secret" not in str(document) and "password_hash" not in str(document)
    create = document["paths"]["/notes"]["post"]
    assert "422" in create["responses"]  # Note's text has a rule
