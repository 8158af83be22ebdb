-- The notes: a title and Markdown text, as written.
CREATE TABLE notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT CHECK (id >= 1),
    title TEXT NOT NULL CHECK (length(CAST(title AS BLOB)) BETWEEN 1 AND 200),
    text TEXT NOT NULL
);
