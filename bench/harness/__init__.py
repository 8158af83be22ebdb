"""The benchmark harness: servers, wrk, capacity and endurance clients, the report."""
