"""The SQL checker: a program's SQL checked against the schema its migrations build.

    migration_files.py  svc.toml's [migrations]: each database's folder of .sql files, read
    statements.py       the SQL each db_exec/db_all/db_one runs, as text where it is known
    dialect_text.py     that text as the runtime sends it to each database
    schema.py           what a database backend gives the checks (plain data)
    sqlite_schema.py    the migrations applied in memory (APSW); statements prepared there
    postgres_schema.py  PostgreSQL: --database-url, a private cluster, or its parser
    postgres_cluster.py the private cluster: cached, locked, started and stopped per check
    schemas.py          the open schemas of one session, closed in one place
    column_types.py     whether a column's type fits the svc type it fills
    check_sql.py        the checks, as diagnostics

svc.pipeline runs it after the route table, in project mode, when svc.toml declares migrations.
"""
