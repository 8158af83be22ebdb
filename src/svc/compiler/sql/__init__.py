"""The SQL checker: a program's SQL checked against the schema its migrations build (issue 33)."""
