

# --- for worker processes (svc.runtime.workers) ----------------------------------------------

def open_database_paths() -> list[str]:
    """The path of every open database (`:memory:` for each in-memory one): the supervisor
    refuses more than one worker while an in-memory database is open."""
    return [db.path for db in _open_dbs]


def reopen_after_fork() -> None:
    """In a worker process just forked from the process that ran `main`: give every open `Db`
    a fresh connection on a fresh thread.

    The parent's database threads do not exist in the child, their queue may have been copied
    mid-operation, and an SQLite connection must never be used on both sides of a fork. Each
    `Db` keeps its path, so the handles `main` made keep working; the new connection opens on
    the new thread before its first job runs (if it cannot, each job answers that error).
    """
    for path, entry in list(_files.items()):
        if not isinstance(entry, Db):  # an open in flight belongs to the parent's loop
            del _files[path]
    for db in list(_open_dbs):
        db._queue = SimpleQueue()
        db._outbox = []
        db._submitted = db._taken = 0
        db._closing = False
        db._overflow = deque()
        db._thread = threading.Thread(target=_reopened_thread_main, args=(db,),
                                      name=f"svc-db {db.path}", daemon=True)
        db._thread.start()


def _reopened_thread_main(db: Db) -> None:
    conn, error = _connect(db.path)
    if conn is not None:
        db._serve(conn)
        return
    stop = False
    while not stop:  # the file cannot be opened here: every job gets the reason
        batch = db._queue.get()
        db._taken += len(batch)
        stop = _STOP in batch
        _deliver_batch(db, [(job[0], error) for job in batch if job is not _STOP])
