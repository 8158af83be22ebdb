"""The entry point of executables made by `svcc build`, and the format of the program they carry.

`svcc build` marshals the compiled program into one data file (`PAYLOAD_NAME`) that PyInstaller
packs next to this script. At start the executable reads it back from the folder its bootloader
unpacked (`sys._MEIPASS`) and runs it with `svc.runner`, exactly as `svcc run` would, except
that relative database paths resolve against the working directory (`base_dir=None`).

This script is the same for every program, and so are its imports: that is what lets
PyInstaller reuse its analysis from one build to the next (see `svc.bundle`).
"""

from __future__ import annotations

import marshal
import os
import sys

PAYLOAD_NAME = "program.svcbin"
#: The folder of the project's installed Python packages inside the executable (`svcc build`
#: copies `.svc/python` there, svc.bundle).
PACKAGES_DATA = "svc-python"
# Bumped whenever the payload layout changes; the executable refuses a payload it cannot read.
PAYLOAD_FORMAT = 1


def encode_program(modules: list) -> bytes:
    """The payload for a program's (svc file path, code object) list, in execution order."""
    return marshal.dumps((PAYLOAD_FORMAT, list(modules)))


def decode_program(data: bytes) -> list:
    """The (svc file path, code object) list back from a payload made by `encode_program`."""
    payload = marshal.loads(data)
    if not (isinstance(payload, tuple) and len(payload) == 2 and payload[0] == PAYLOAD_FORMAT):
        raise ValueError("the embedded program has an unknown format; rebuild it with svcc build")
    return payload[1]


def unpacked_folder() -> str:
    """Where the bootloader unpacked the executable's files (this script's folder when not
    frozen)."""
    return getattr(sys, "_MEIPASS", None) or os.path.dirname(os.path.abspath(__file__))


def payload_path() -> str:
    """Where the bootloader unpacked the program."""
    return os.path.join(unpacked_folder(), PAYLOAD_NAME)


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
        with open(payload_path(), "rb") as f:
            code = decode_program(f.read())
    except (OSError, ValueError, EOFError, TypeError) as exc:
        print(f"error: cannot load the embedded program: {exc}", file=sys.stderr)
        return 1
    use_packages(packages_path())
    return run_program(code, base_dir=None)


if __name__ == "__main__":
    sys.exit(main())
