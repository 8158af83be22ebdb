"""Background work of a serving process: durable jobs, schedules, and the service that runs
them beside the server.
"""
