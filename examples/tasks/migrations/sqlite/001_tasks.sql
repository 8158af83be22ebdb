-- The tasks table on SQLite. The CHECK constraints repeat the API's rules, so no other
-- writer can break them; SQLite writes the RFC 3339 UTC timestamps. (IF NOT EXISTS: a
-- database made before the task manager used migrations already has this table.)
CREATE TABLE IF NOT EXISTS tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT CHECK (id >= 1),
    title TEXT NOT NULL CHECK (typeof(title) = 'text' AND length(CAST(title AS BLOB)) BETWEEN 1 AND 240),
    done INTEGER NOT NULL DEFAULT 0 CHECK (typeof(done) = 'integer' AND done IN (0, 1)),
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
