"""Topics: live fan-out of published messages to subscribers, in this process and in every
process on the same database. At most once, in order per publisher; durable work is jobs'.

    service.py       the `Topics` service: `start_topics(db)`, `publish`, `subscribe`, `stop`;
                     checks names and payloads, picks the bus by database, joins the lifecycle
    hub.py           local fan-out: `Subscription`s by topic, each with a bounded queue
    outbox.py        what this process published for the others, waiting to be sent in order
    order.py         in order per publisher at every receiver: the last number seen from each
    postgres_bus.py  between instances on PostgreSQL: LISTEN/NOTIFY on one channel, one
                     dedicated connection per process, a table for large payloads
    sqlite_bus.py    between processes on one SQLite file: a table they append to and poll
    notices.py       the log lines: one per episode of drops or of an outage, never per message

The decisions behind them are in docs/decisions/topics.md.
"""

from svc.runtime.topics.hub import DEFAULT_QUEUE_SIZE, Subscription
from svc.runtime.topics.service import (MAX_TOPIC_LENGTH, TopicError, Topics,
                                        TopicsStopped, start_topics)

__all__ = ["DEFAULT_QUEUE_SIZE", "MAX_TOPIC_LENGTH", "Subscription",
           "TopicError", "Topics", "TopicsStopped", "start_topics"]
