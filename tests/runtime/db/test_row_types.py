"""The row mapper's enum and JSON fields and single columns, on rows as the databases give them
(tuples), without a database: what fits, what is converted, what each misfit says. Classes are
msgspec Structs with `__svc_fields__`, as generated code defines them (a JSON field decodes as
the Struct's own field type)."""

from __future__ import annotations

from typing import ClassVar, Literal, Optional

import msgspec
import pytest

from svc.runtime.db.rows import RowMismatch, mapper


class Home(msgspec.Struct, forbid_unknown_fields=True):
    city: str
    __svc_fields__: ClassVar = (("city", "str", False),)


class User(msgspec.Struct, forbid_unknown_fields=True):
    id: int
    role: Literal["admin", "member"]
    boss: Optional[Literal["admin", "member"]]
    tags: list[int]
    home: Optional[Home]
    __svc_fields__: ClassVar = (
        ("id", "i64", False), ("role", "Role", False, "enum", ("admin", "member")),
        ("boss", "Role", True, "enum", ("admin", "member")), ("tags", "List[i64]", False, "json"),
        ("home", "Home", True, "json"))


NAMES = ("id", "role", "boss", "tags", "home")


def test_enum_and_json_fields_fill_a_class():
    to_user = mapper(User, NAMES)
    assert to_user((1, "admin", None, "[1, 2]", '{"city": "Oslo"}')) == User(
        id=1, role="admin", boss=None, tags=[1, 2], home=Home(city="Oslo"))
    assert to_user((2, "member", "admin", "[]", None)) == User(
        id=2, role="member", boss="admin", tags=[], home=None)
    assert to_user((3, "member", None, "[]", "null")).home is None  # JSON null in a T? field


@pytest.mark.parametrize("row, message", [
    ((1, "owner", None, "[]", None), "column 'role' holds 'owner', which is no member of Role "
                                     "(admin, member) for field User.role"),
    ((1, "admin", "Admin", "[]", None), "column 'boss' holds 'Admin', which is no member of "
                                        "Role (admin, member) for field User.boss"),
    ((1, 7, None, "[]", None), "column 'role' holds INTEGER value 7, does not fit for field "
                               "User.role (Role)"),
    ((1, None, None, "[]", None), "column 'role' is NULL but field User.role is Role, not Role?"),
    ((1, "admin", None, '[1, "x"]', None), "column 'tags' holds '[1, \"x\"]', which is no "
                                           "List[i64] for field User.tags: Expected `int`, got "
                                           "`str` - at `$[1]`"),
    ((1, "admin", None, "[1,", None), "column 'tags' holds '[1,', which is no List[i64] for "
                                      "field User.tags: Input data was truncated"),
    ((1, "admin", None, b"[]", None), "column 'tags' holds BLOB value b'[]', does not fit for "
                                      "field User.tags (List[i64])"),
    ((1, "admin", None, "[]", '{"city": "x", "zip": 1}'),
     "column 'home' holds '{\"city\": \"x\", \"zip\": 1}', which is no Home for field User.home: "
     "Object contains unknown field `zip`"),
])
def test_values_that_do_not_fit_say_which_column_and_field(row, message):
    with pytest.raises(RowMismatch) as caught:
        mapper(User, NAMES)(row)
    assert str(caught.value) == message


def test_single_columns():
    assert mapper(("db_all[i64]", "i64", False), ("n",))((5,)) == 5
    assert mapper(("db_one[i64]", "i64", True), ("n",))((None,)) is None
    assert mapper(("db_all[bool]", "bool", False), ("b",))((1,)) is True
    assert mapper(("db_all[f64]", "f64", False), ("x",))((2,)) == 2.0
    role = ("db_all[Role?]", "Role", True, "enum", ("admin", "member"))
    assert [mapper(role, ("r",))((v,)) for v in ("admin", None)] == ["admin", None]
    with pytest.raises(RowMismatch, match=r"^db_all\[i64\] takes the value of a query's only "
                                          r"column, and this query has 2 columns \(a, b\)$"):
        mapper(("db_all[i64]", "i64", False), ("a", "b"))
    with pytest.raises(RowMismatch, match=r"^column 'n' is NULL but db_all\[i64\] takes no NULL "
                                          r"\(db_all\[i64\?\] does\)$"):
        mapper(("db_all[i64]", "i64", False), ("n",))((None,))
    with pytest.raises(RowMismatch, match=r"^column 'r' holds 'x', which is no member of Role "
                                          r"\(admin, member\) for db_all\[Role\?\]$"):
        mapper(role, ("r",))(("x",))
