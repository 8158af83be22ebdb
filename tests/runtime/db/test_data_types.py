"""Every svc type into and out of the database, on both: enums (arguments, fields, single
columns, a stored value that is no member), JSON values (Lists, Maps, classes as arguments and
fields, a List both in IN and as a value, values that do not fit, inf and NUL refused),
single-column results (COUNT, MAX of nothing, NULLs, the wrong number of columns) and REGEXP
(RE2's patterns, NOT REGEXP, NULL, bad patterns as `invalid`, a transaction that goes on).

One program (programs/data_types.svc) runs once per database with `svcc run`, on an SQLite file
and on a database of the session's PostgreSQL cluster, and prints one line per case; both must
print exactly the lines below. Bad inputs are followed by a look at the data: nothing was
written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.svc_process import run_to_end

PROGRAM = Path(__file__).with_name("programs") / "data_types.svc"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def printed(request, tmp_path_factory) -> list[str]:
    if request.param == "sqlite":
        url = str(tmp_path_factory.mktemp("data_types") / "data.sqlite")
    else:
        url = request.getfixturevalue("postgres_cluster").create_database()
    result = run_to_end(["run", str(PROGRAM)], env={"SVC_DB": url})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout.splitlines()


def lines(printed: list[str], section: str) -> list[str]:
    return [line for line in printed if line.startswith(section)]


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(PROGRAM.read_text().splitlines(), 1) if text in line)


def test_enums_as_arguments_fields_and_columns(printed):
    assert lines(printed, "enums") == [
        'enums member: bob "member" "admin"',
        'enums member: cy "member" null',
        'enums in: 3',
        'enums not in: 2',
        'enums column: ["admin","member","member"]',
        'enums nullable column: [null,"admin",null]',
        "enums bad: database: column 'role' holds 'owner', which is no member of Role (admin, member) for field User.role",
        "enums bad column: database: column 'role' holds 'owner', which is no member of Role (admin, member) for db_one[Role]",
        'enums after: 3',
    ]


def test_json_values_as_arguments_and_fields(printed):
    assert lines(printed, "json") == [
        'json user: {"id":1,"name":"ann","role":"admin","boss":null,"tags":["a","b"],"home":{"city":"Oslo","zip":"0150"},"scores":{"a":-0.25,"b":1.5,"aa":2.0}}',
        'json user: {"id":2,"name":"bob","role":"member","boss":"admin","tags":[],"home":null,"scores":{}}',
        'json user: {"id":3,"name":"cy","role":"member","boss":null,"tags":["c"],"home":{"city":"Rome","zip":null},"scores":{}}',
        'json keys: a b aa',
        'json list set: 1',
        'json list both: 2',
        'json tags: ann ["x","it\'s","naïve"]',
        'json tags: bob ["bob","cy"]',
        'json tags: cy ["bob","cy"]',
        'json bad: database: column \'home\' holds \'{"city": 5}\', which is no Address for field User.home: Expected `str`, got `int` - at `$.city`',
        f'json list in: database: {PROGRAM}:{line_of("WHERE id IN (?1)")}: only a List of i64, i32, f64, bool, str or an enum stands for its values in IN (?n): ?1 is a List of other values (a class, a List, a T?), which is a JSON value anywhere but in IN (in SQL: SELECT * FROM users WHERE id IN (?1))',
        'json inf: invalid: an f64 value is inf or NaN, which JSON cannot carry to the database (SQL argument 7)',
        'json nul: invalid: text with a NUL character (U+0000) cannot go to the database (SQL argument 1)',
        'json after: 3 {"city":"Oslo","zip":"0150"}',
    ]


def test_single_column_results(printed):
    assert lines(printed, "columns") == [
        'columns count: 3',
        'columns max of none: null',
        'columns no row: null',
        'columns names: ["ann","bob","cy"]',
        'columns sum: 6',
        'columns nullable: [1,null,3]',
        'columns bool: [false,true,true]',
        'columns f64: 2.5',
        "columns null: database: column 'n' is NULL but db_all[i64] takes no NULL (db_all[i64?] does)",
        "columns two: database: db_all[str] takes the value of a query's only column, and this query has 2 columns (id, name)",
        "columns text: database: column 'name' holds TEXT value 'ann', does not fit for db_one[i64]",
        'columns class: 3',
    ]


def test_regexp_with_re2_patterns(printed):
    assert lines(printed, "regexp") == [
        'regexp: ["ann","bob"]',
        'regexp not: ["bob","cy"]',
        'regexp boundary: ["ann"]',
        'regexp case: ["bob"]',
        'regexp null: [2]',
        'regexp literal: ["cy"]',
        'regexp bad: invalid: invalid regular expression: missing ): (a',
        'regexp bad: invalid: invalid regular expression: repetition count above 255: {300}',
        'regexp bad: invalid: invalid regular expression: bad repetition operator: **',
        'regexp tx: invalid: invalid regular expression: invalid character class range: z-a',
        'regexp after: [7,9,3]',
    ]
