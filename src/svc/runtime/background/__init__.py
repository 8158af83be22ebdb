"""Background work of a serving process: durable jobs, schedules, and the service that runs
them beside the server.

    jobs.py        durable jobs: `enqueue`, and the runner that claims and runs `@job` handlers
    schedules.py   `@every` and `@cron` functions, run once per period across every process
                   that shares the database
    job_store.py   the rows behind both: the tables and every statement on them, for SQLite
                   and PostgreSQL
    service.py     what `serve` starts once it listens and stops after the last answer,
                   before the database closes: the job runner and the schedule runner
"""
