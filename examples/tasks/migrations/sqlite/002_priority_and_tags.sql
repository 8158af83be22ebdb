-- A task's priority (one of the Priority enum's names) and its tags (a JSON array of text).
ALTER TABLE tasks ADD COLUMN priority TEXT NOT NULL DEFAULT 'normal'
    CHECK (priority IN ('low', 'normal', 'high'));
ALTER TABLE tasks ADD COLUMN tags TEXT NOT NULL DEFAULT '[]' CHECK (json_type(tags) = 'array');
