"""Process signals a server shares between its forms: one process, a supervisor and its
workers, and a built executable under its bootloader.

Two facts, each stated once: SIGINT and SIGTERM both mean "stop gracefully", and a process
whose parent is killed outright (kill -9) must not keep serving with nobody to stop it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def install_stop_handlers(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> list[int]:
    """SIGINT and SIGTERM set `stop`; returns the signals handled (none on Windows, or off
    the main thread, where the loop cannot take them)."""
    installed = []
    for signum in STOP_SIGNALS:
        try:
            loop.add_signal_handler(signum, stop.set)
            installed.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    return installed


def stop_when_parent_dies() -> None:
    """On Linux, ask the kernel for SIGTERM (a graceful stop) when the parent process dies.

    A worker outliving its supervisor, or a program outliving its executable's bootloader,
    would hold the port with nobody to stop it. PR_SET_PDEATHSIG covers a parent that is
    killed outright; a parent that died before the call took effect is noticed by the change
    of parent pid.
    """
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)
