-- A task's attachments: files uploaded to it, kept in the database (so every instance of the
-- task manager on one database serves them), removed with their task.
CREATE TABLE attachments (
    id INTEGER PRIMARY KEY AUTOINCREMENT CHECK (id >= 1),
    task_id INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    name TEXT NOT NULL CHECK (length(CAST(name AS BLOB)) BETWEEN 1 AND 255),
    content_type TEXT NOT NULL,
    size INTEGER NOT NULL CHECK (size >= 0),
    sha256 TEXT NOT NULL CHECK (length(sha256) = 64),
    data BLOB NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE INDEX attachments_by_task ON attachments (task_id);
