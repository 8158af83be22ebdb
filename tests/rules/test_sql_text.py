"""Reading SQL text without parsing it: List placeholders in `IN (...)` and the REGEXP operator
written for PostgreSQL, never inside literals, quoted names or comments."""

from svc.rules.sql_text import postgres_operators, regexp_placeholders, scan


def test_a_list_placeholder_alone_in_in_is_written_by_in_list():
    text, statements, misplaced = scan(
        "SELECT ?1 WHERE a IN (?1) AND b NOT IN ( ?2 ) AND c IN (?2, 3)", lambda n: f"<{n}>",
        frozenset({1, 2}), in_list=lambda n: f"[{n}]")
    assert text == "SELECT <1> WHERE a IN ([1]) AND b NOT IN ( [2] ) AND c IN (<2>, 3)"
    assert (statements, misplaced) == (1, 1)


def test_regexp_is_written_as_postgres_operators():
    sql = ("SELECT name FROM t WHERE name REGEXP ?1 AND note not  Regexp ? AND 'x REGEXP y' "
           "<> \"regexp\" -- REGEXP\n AND my_regexp = regexp_count /* regexp */")
    assert postgres_operators(sql) == (
        "SELECT name FROM t WHERE name ~ ?1 AND note !~ ? AND 'x REGEXP y' <> \"regexp\" "
        "-- REGEXP\n AND my_regexp = regexp_count /* regexp */")
    assert regexp_placeholders(sql) == (1, 2)
    assert postgres_operators("SELECT 1") == "SELECT 1"


def test_the_pattern_placeholders_follow_sqlites_numbering():
    assert regexp_placeholders("SELECT ?3, ? WHERE a REGEXP ? OR b REGEXP ?2 OR c REGEXP (?1)") \
        == (5, 2)
    assert regexp_placeholders("SELECT a FROM t WHERE cannot REGEXP ?1") == (1,)
    assert postgres_operators("SELECT a FROM t WHERE cannot REGEXP ?1") == (
        "SELECT a FROM t WHERE cannot ~ ?1")
