"""The entry point of executables made by `svcc build`, and the format of the program they carry.

An executable is a PyInstaller `--onefile` file that holds CPython, the runtime and this
script, the same for every program, with the program attached after it: the compiled
program, marshalled (`encode_program`), in base64, then its length and `TRAILER_MAGIC`
(`attach_program`). At start this script reads the program back from the end of its own file
(`sys.executable`) and runs it with `svc.runner`, exactly as `svcc run` would, except that
relative database paths resolve against the working directory (`base_dir=None`).

Why after the archive, not inside it: `svcc build` then makes PyInstaller's file once per
toolchain (and set of Python packages) and only appends each program to a copy, which takes
a moment instead of re-assembling the whole archive (see `svc.bundle`). The bootloader finds
its archive by scanning back from the end of the file for its cookie, whose bytes (control
characters among them) never occur in base64 or in the trailer.
"""

from __future__ import annotations

import base64
import marshal
import os
import sys

#: The folder of the project's installed Python packages inside the executable (`svcc build`
#: copies `.svc/python` there, svc.bundle).
PACKAGES_DATA = "svc-python"
# Bumped whenever the payload layout changes; the executable refuses a payload it cannot read.
PAYLOAD_FORMAT = 2
#: The last bytes of an executable that carries a program; before them, the length of the
#: program's base64 text in LENGTH_DIGITS decimal digits, and before that the text itself.
TRAILER_MAGIC = b"SVCPROG2"
LENGTH_DIGITS = 20
NOTHING_ATTACHED = "no program is attached to this executable"


def encode_program(modules: list) -> bytes:
    """The payload for a program's (svc file path, code object) list, in execution order."""
    return marshal.dumps((PAYLOAD_FORMAT, list(modules)))


def decode_program(data: bytes) -> list:
    """The (svc file path, code object) list back from a payload made by `encode_program`."""
    payload = marshal.loads(data)
    if not (isinstance(payload, tuple) and len(payload) == 2 and payload[0] == PAYLOAD_FORMAT):
        raise ValueError("the embedded program has an unknown format; rebuild it with svcc build")
    return payload[1]


def attach_program(executable: str, payload: bytes) -> None:
    """Append `payload` (from `encode_program`) to the file `executable`."""
    text = base64.b64encode(payload)
    with open(executable, "ab") as f:
        f.write(text + b"%0*d" % (LENGTH_DIGITS, len(text)) + TRAILER_MAGIC)


def attached_program(executable: str) -> bytes:
    """The payload attached to `executable`; ValueError when it carries none."""
    tail = len(TRAILER_MAGIC) + LENGTH_DIGITS
    with open(executable, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        if size < tail:
            raise ValueError(NOTHING_ATTACHED)
        f.seek(size - tail)
        trailer = f.read(tail)
        length = trailer[:LENGTH_DIGITS]
        if trailer[LENGTH_DIGITS:] != TRAILER_MAGIC or not length.isdigit() \
                or int(length) > size - tail:
            raise ValueError(NOTHING_ATTACHED)
        f.seek(size - tail - int(length))
        return base64.b64decode(f.read(int(length)), validate=True)


def unpacked_folder() -> str:
    """Where the bootloader unpacked the executable's files (this script's folder when not
    frozen)."""
    return getattr(sys, "_MEIPASS", None) or os.path.dirname(os.path.abspath(__file__))


def packages_path() -> tuple[str, ...]:
    """The bundled project's Python packages, as the import path entries that find them
    (none when the project had none): what `svcc run` takes from `.svc/python`."""
    folder = os.path.join(unpacked_folder(), PACKAGES_DATA)
    return (folder,) if os.path.isdir(folder) else ()


def receive_signals_once() -> None:
    """Take this process out of the terminal's process group, on POSIX.

    A onefile executable is two processes: the bootloader, which unpacks and waits, and this
    one, which runs the program. The bootloader forwards every signal it gets to us, so a
    Ctrl+C in a terminal, which goes to the whole foreground process group, would arrive twice;
    the second could land after the server's graceful shutdown has begun and cut it short.
    In our own group we get the Ctrl+C once, through the bootloader, exactly as `kill PID`.
    """
    if getattr(sys, "frozen", False) and hasattr(os, "setpgid"):
        try:
            os.setpgid(0, 0)
        except OSError:  # already a group or session leader: nothing to leave
            pass


def stop_with_the_bootloader() -> None:
    """On Linux, get SIGTERM when the bootloader dies, so a server never outlives it.

    Out of the terminal's process group (`receive_signals_once`), a `kill -9` of the
    bootloader or of its group no longer reaches this process; it would keep serving, its
    port taken, with nobody to stop it.
    """
    if getattr(sys, "frozen", False):
        from svc.process import stop_when_parent_dies

        stop_when_parent_dies()


def main() -> int:
    """Load the embedded program and serve it like `svcc run`; the exit status is its own."""
    from svc.process import reopen_closed_standard_streams
    from svc.runner import run_program, use_packages

    reopen_closed_standard_streams()
    receive_signals_once()
    stop_with_the_bootloader()
    try:
        code = decode_program(attached_program(sys.executable))
    except (OSError, ValueError, EOFError, TypeError) as exc:
        print(f"error: cannot load the embedded program: {exc}", file=sys.stderr)
        return 1
    use_packages(packages_path())
    return run_program(code, base_dir=None)


if __name__ == "__main__":
    sys.exit(main())
