"""nginx as the physical reference (issue 39): its configuration written for the port a run
chose, in a prefix of its own under bench/.work, so that it needs nothing of the machine's
nginx set-up (no /etc/nginx, no /var/log/nginx, no service).

nginx reads its port only from its configuration file, so bench/peers/nginx/nginx.conf is a
template with `@PORT@` in its `listen` line; every start writes it anew.
"""

from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
TEMPLATE = BENCH / "peers" / "nginx" / "nginx.conf"
PREFIX = BENCH / ".work" / "nginx"
EXECUTABLE = "/usr/sbin/nginx"  # Debian's nginx-light (bench/setup.sh)


def configuration(port: int) -> str:
    """The template with its port filled in."""
    text = TEMPLATE.read_text()
    if "@PORT@" not in text:
        raise RuntimeError(f"{TEMPLATE} has no @PORT@ to fill in")
    return text.replace("@PORT@", str(port))


def arguments(port: int) -> tuple[str, ...]:
    """Writes the configuration for `port` into the prefix (with the temporary folders nginx
    opens at start) and returns the arguments that make nginx use it: its prefix, its
    configuration and its error log there (`-e`, so that not even the start-up touches the
    machine's log)."""
    (PREFIX / "temp").mkdir(parents=True, exist_ok=True)
    (PREFIX / "nginx.conf").write_text(configuration(port))
    return ("-p", f"{PREFIX}/", "-c", "nginx.conf", "-e", "error.log")
