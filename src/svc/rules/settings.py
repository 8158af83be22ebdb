"""svc.toml's tables as one frozen `Settings` value.

svc.project checks svc.toml and builds the value with `Settings.from_tables`; code generation
emits it once, in the entry module, as the same call over the checked tables
(`_svc_SETTINGS = Settings.from_tables({...})`), and passes it as one argument to `serve`,
`test_request` and `run_jobs`; the runner and `svcc test` read it for the program's services.
Adding a table touches its field here, its check (svc.project) and its consumer.

`from_tables` takes tables that were checked already: it builds, it does not validate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from svc.rules.traffic import (
    CorsSettings, RateLimitSettings, cors_settings, rate_limit_settings,
)

#: The tables svc.toml may hold besides its `entry` and `name` keys, in the order they are
#: listed in messages.
TABLES = ("config", "server", "cors", "rate_limit", "guard_limits", "route_limits", "proxies",
          "jobs", "dependencies", "python")
#: Tables for the tools, not the running program: never part of the settings code generation
#: emits (`[dependencies]` is what `svcc install` and `svcc build` read, svc.dependencies).
TOOL_TABLES = ("dependencies",)


@dataclass(frozen=True)
class JobSettings:
    """svc.toml's `[jobs]`, handed to the background runners (svc.runtime.background) and the
    claim statements. `poll_seconds`: how often an idle job runner looks for due jobs made
    elsewhere (another process, a retry whose time came); a job enqueued in its own process
    wakes it at once. `lease_grace_seconds`: how long a claim (of a job or a scheduled run)
    outlives the run's deadline before another runner may take it over: a crashed process's
    jobs wait that long. A live runner cancels its run at the deadline, so the grace only has
    to cover a busy event loop and clocks running apart."""

    poll_seconds: float = 0.2
    lease_grace_seconds: float = 5.0

    @property
    def lease_grace_ms(self) -> int:
        """The grace as the tables count time (milliseconds)."""
        return round(self.lease_grace_seconds * 1000)


#: `[jobs]`'s keys: what each means, and the least value allowed (seconds, above zero).
JOB_KEYS = {"poll_seconds": "how often an idle job runner looks for due jobs",
            "lease_grace_seconds": "how long after a run's deadline its job may be taken back"}
JOB_LIMITS = {"poll_seconds": (0.001, 60.0), "lease_grace_seconds": (0.05, 3600.0)}


@dataclass(frozen=True)
class Settings:
    """Everything svc.toml says to the running program (the defaults: no svc.toml)."""

    #: `[config]`: values for `config[T]()` (TOML scalars); None without svc.toml.
    config: Mapping[str, object] | None = None
    #: `[server] demo_routes`: whether /stream and /ws are served.
    demo_routes: bool = True
    cors: CorsSettings | None = None
    rate_limit: RateLimitSettings | None = None
    #: `[guard_limits.<guard>]`: (guard, its bucket settings), in svc.toml's order.
    guard_limits: tuple[tuple[str, RateLimitSettings], ...] = ()
    #: `[route_limits."METHOD /path"]`: (route, its bucket settings), in svc.toml's order.
    route_limits: tuple[tuple[str, RateLimitSettings], ...] = ()
    #: `[proxies] trusted`: the addresses and networks whose X-Forwarded-For is believed.
    proxies: tuple[str, ...] = ()
    jobs: JobSettings = field(default_factory=JobSettings)
    #: `[python] threads`: the threads that run blocking `@python` functions (None: the
    #: default, svc.runtime.lib.python_calls).
    python_threads: int | None = None
    #: The checked tables this value was built from: what code generation emits.
    tables: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def has_gate(self) -> bool:
        """Whether requests pass the traffic gate (svc.runtime.traffic.gate) before routing."""
        return self.cors is not None or self.rate_limit is not None or bool(self.route_limits)

    @staticmethod
    def from_tables(tables: Mapping[str, Any]) -> Settings:
        """The settings of svc.toml's checked tables (absent tables: the defaults)."""
        config = tables.get("config")
        cors = tables.get("cors")
        rate = tables.get("rate_limit")
        jobs = tables.get("jobs") or {}
        return Settings(
            config=MappingProxyType(dict(config or {})),
            demo_routes=bool((tables.get("server") or {}).get("demo_routes", True)),
            cors=None if cors is None else cors_settings(cors),
            rate_limit=None if rate is None else rate_limit_settings(rate),
            guard_limits=_limits(tables.get("guard_limits")),
            route_limits=_limits(tables.get("route_limits")),
            proxies=tuple((tables.get("proxies") or {}).get("trusted", ())),
            jobs=JobSettings(**{key: float(value) for key, value in jobs.items()}),
            python_threads=(tables.get("python") or {}).get("threads"),
            tables=MappingProxyType({key: tables[key] for key in TABLES
                                     if key in tables and key not in TOOL_TABLES}))


def _limits(table: Mapping[str, Any] | None) -> tuple[tuple[str, RateLimitSettings], ...]:
    """The buckets of `[guard_limits]` or `[route_limits]`: (name, settings) per inner table."""
    return tuple((name, rate_limit_settings({**limit, "client": "peer"}))
                 for name, limit in (table or {}).items())


def jobs_problem(table: dict) -> tuple[str, str] | None:
    """(key, message) for the first `[jobs]` entry that is unknown or out of range."""
    for key, value in table.items():
        if key not in JOB_KEYS:
            return key, f"unknown key '{key}' in svc.toml [jobs] (allowed: {', '.join(JOB_KEYS)})"
        low, high = JOB_LIMITS[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not low <= value <= high:
            return key, (f"'{key}' in svc.toml [jobs] must be a number of seconds from {low:g} "
                         f"to {high:g} ({JOB_KEYS[key]}), got {value!r}")
    return None


#: `[python]`'s keys: what each means, and the range allowed.
PYTHON_KEYS = {"threads": "the threads that run blocking @python functions"}
PYTHON_THREADS = (1, 256)


def python_problem(table: dict) -> tuple[str, str] | None:
    """(key, message) for the first `[python]` entry that is unknown or out of range."""
    for key, value in table.items():
        if key not in PYTHON_KEYS:
            return key, (f"unknown key '{key}' in svc.toml [python] (allowed: "
                         f"{', '.join(PYTHON_KEYS)})")
        low, high = PYTHON_THREADS
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return key, (f"'{key}' in svc.toml [python] must be a whole number from {low} to "
                         f"{high} ({PYTHON_KEYS[key]}), got {value!r}")
    return None
