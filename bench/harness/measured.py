"""A report section measured by a script of bench/ in a process of its own: the script prints
its results as JSON, and a failure (it crashed, hung past its time, printed no JSON) is an
incident of the report, never the end of the whole run."""

from __future__ import annotations

import json
import subprocess
import sys


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


def lines_results(name: str, script, mode: dict, log, incidents: list) -> dict | None:
    """The results of a script that prints `{"lines": [...], ...}` with `--json` (`--quick`
    in a quick run, one round), each line logged as it comes."""
    command = [sys.executable, str(script), "--json"]
    if mode.get("rounds", 1) <= 1:
        command.append("--quick")
    results = json_results(name, command, log, incidents)
    for line in (results or {}).get("lines", []):
        log(f"  {line}")
    return results


def lines_section(title: str, intro: str, results: dict | None) -> list[str]:
    """A report section of such a script: its title, what it measures, its lines as they are."""
    if not results:
        return []
    return [f"## {title}", "", intro, "", "```text", *results["lines"], "```", ""]
