"""What may name a topic: one rule for the compiler (a `topic("name")` literal is checked when
the program is compiled) and the runtime's topics service (svc.runtime.topics), so a name the
compiler accepts is never refused while the program runs."""

from __future__ import annotations

#: The longest topic name, in characters.
MAX_TOPIC_LENGTH = 200


def topic_name_problem(name: str) -> str | None:
    """Why `name` cannot name a topic, or None: 1 to MAX_TOPIC_LENGTH printable characters
    (no control or separator characters, which would not survive a log line or a channel)."""
    if not 0 < len(name) <= MAX_TOPIC_LENGTH:
        return f"a topic name has 1 to {MAX_TOPIC_LENGTH} characters (got {len(name)})"
    if not name.isprintable():
        return f"a topic name has no control or separator characters (got {name[:40]!r})"
    return None
