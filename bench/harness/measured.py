"""A report section measured by a script of bench/ in a process of its own: the script prints
its results as JSON, and a failure (it crashed, hung past its time, printed no JSON) is an
incident of the report, never the end of the whole run."""

from __future__ import annotations

import json
import subprocess


def json_results(name: str, command: list[str], log, incidents: list,
                 timeout: float = 600) -> dict | None:
    """The JSON `command` prints, or None after an incident named `name`."""
    log(name)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              check=True)
        return json.loads(done.stdout)
    except (subprocess.SubprocessError, OSError, ValueError) as failure:
        incidents.append(f"{name}: {failure}")
        log(f"  INCIDENT: {failure}")
        return None
