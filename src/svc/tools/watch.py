"""`svcc run --watch`: serve a program, and serve it again each time one of its files changes.

The server runs in a child process (`svcc run` without --watch), so a new version replaces it
cleanly: on a change the program is checked again here, through the same pipeline; when it
checks, the old server gets SIGTERM (it answers the requests in flight, then exits), and the
new one starts on the same port (the child inherits the environment, SVC_PORT included). When
it does not check, the diagnostics are printed and the old server keeps serving.

The files watched are the ones the pipeline read (sources, svc.toml) and the include_text
files, watched through their folders: editors often save by writing a new file and renaming
it over the old one, which a watch on the file itself would miss. Ctrl+C stops the server and
the watch, exit 0. A server that exits by itself (it failed at start: a migration error, a port
in use) is waited for at once and reported: "the program exited with status N; waiting for
changes".
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import watchfiles

from svc import pipeline
from svc.process import on_sigterm
from svc.compiler.diagnostics import render_all

#: How long file events are gathered into one change (an editor's save is several events).
DEBOUNCE_MS = 50
#: How long a server may take to answer its requests in flight before it is killed.
STOP_SECONDS = 10.0


def _say(message: str) -> None:
    print(f"watch: {message}", file=sys.stderr, flush=True)


def program_files(result: pipeline.Checked | pipeline.Failed) -> set[str]:
    """Every file the program's check read or embedded, as real paths."""
    program = result.program
    included = program.included_files if program is not None else []
    return {os.path.realpath(p) for p in [*result.sources, *included]}


class Watcher:
    """The server child process and the files whose change restarts it."""

    def __init__(self, target: pipeline.Target) -> None:
        self.target = target
        self.server: subprocess.Popen | None = None
        self.files: set[str] = set()
        self.stop = threading.Event()

    def command(self) -> list[str]:
        where = ["--project", self.target.project] if self.target.project else [self.target.file]
        return [sys.executable, "-m", "svc.cli", "run", *where]

    def check(self) -> bool:
        """Check the program again; the diagnostics are printed when it does not check."""
        result = pipeline.check(self.target)
        if isinstance(result, pipeline.Failed):
            # A check that failed may have stopped early (a broken svc.toml is all it read):
            # the files of the last version are still watched, so editing any of them checks
            # again, wherever they are.
            self.files |= program_files(result)
            print(render_all(result.diagnostics, result.sources), file=sys.stderr, flush=True)
            return False
        self.files = program_files(result)
        return True

    def restart(self) -> None:
        self.stop_server()
        self.server = subprocess.Popen(self.command())
        threading.Thread(target=self.reap, args=(self.server,), daemon=True).start()

    def reap(self, server: subprocess.Popen) -> None:
        """Wait for the server child, so that one that exits by itself (a migration that
        fails, a port in use, a fault in main) leaves no defunct process behind, and say so:
        the watch goes on, and the next change that checks starts it again. A server stopped
        by `stop_server` (a restart, Ctrl+C) is not reported."""
        status = server.wait()
        if self.server is server:
            _say(f"{exit_text(status)}; waiting for changes")

    def stop_server(self) -> None:
        """SIGTERM, then wait for the requests in flight; kill only if it takes too long."""
        server, self.server = self.server, None
        if server is None or server.poll() is not None:
            return
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()

    def folders(self) -> set[str]:
        return {os.path.dirname(f) for f in self.files}

    def relevant(self, change: watchfiles.Change, path: str) -> bool:
        """A change to a file of the program, or a new .svc file or svc.toml next to one
        (it may be the import that was missing)."""
        real = os.path.realpath(path)
        return real in self.files or real.endswith(".svc") or os.path.basename(real) == "svc.toml"

    def run(self) -> int:
        if self.check():
            self.restart()
            _say(f"serving {self.target.display_name}; restarts when one of its "
                 f"{len(self.files)} files changes (Ctrl+C stops)")
        else:
            _say("not started: fix the errors above and save")
        while not self.stop.is_set():
            folders = self.folders()
            for changes in watchfiles.watch(*folders, watch_filter=self.relevant,
                                            debounce=DEBOUNCE_MS, step=20, stop_event=self.stop,
                                            raise_interrupt=True):
                self.changed(sorted({os.path.relpath(p) for _, p in changes}))
                if self.folders() != folders:
                    break  # the program now reads files elsewhere: watch those folders
        return 0

    def changed(self, paths: list[str]) -> None:
        _say(f"{', '.join(paths)} changed")
        if self.check():
            self.restart()
            _say(f"restarted {self.target.display_name}")
        elif self.server is not None and self.server.poll() is None:
            _say("not restarted: the previous version is still serving")
        else:
            _say("not started: fix the errors above and save")


def exit_text(status: int) -> str:
    """How the program ended: `Popen.returncode` is -N for a program killed by signal N."""
    if status < 0:
        return f"the program was killed by signal {-status}"
    return f"the program exited with status {status}"


def watch_and_serve(target: pipeline.Target) -> int:
    """`svcc run --watch`: serve until Ctrl+C (or SIGTERM), then stop the server; exit 0.

    Ctrl+C is Python's KeyboardInterrupt, set here even when the watch was started with SIGINT
    ignored (a shell script's `&` does that, and the ignoring is inherited): the server
    itself stops on SIGINT however it was started, and so does the watch."""
    watcher = Watcher(target)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with on_sigterm(lambda *_: watcher.stop.set()):
            return watcher.run()
    except KeyboardInterrupt:
        return 0
    finally:
        watcher.stop_server()
