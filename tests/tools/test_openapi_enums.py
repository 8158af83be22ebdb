"""Enums in `svcc openapi`: a path, query or body field of an enum type is a string schema
listing the members (a `T?` adds null); the document stays valid OpenAPI 3.1."""

from __future__ import annotations

from openapi_spec_validator import validate

from tests.helpers.openapi_check import openapi_document

ROLE = {"type": "string", "enum": ["admin", "member"]}


def test_enum_parameters_and_fields_list_their_members() -> None:
    document = openapi_document(["tests/e2e/programs/enums.svc"])
    validate(document)
    parameters = {p["name"]: p for p in document["paths"]["/users/{role}"]["get"]["parameters"]}
    assert parameters["role"]["in"] == "path" and parameters["role"]["schema"] == ROLE
    assert parameters["sort"]["in"] == "query" and not parameters["sort"]["required"]
    assert parameters["sort"]["schema"] == ROLE
    user = document["components"]["schemas"]["User"]["properties"]
    assert user["role"] == ROLE
    assert user["boss"] == {"type": ["string", "null"], "enum": ["admin", "member", None]}
