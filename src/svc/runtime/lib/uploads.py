"""`Upload`, a file a request brought, and its builtins: `upload_name`, `upload_type`,
`upload_size`, `upload_read`, `upload_sha256`, `upload_move`.

An `Upload` is the value of a handler's `Upload` parameter: one file of a multipart body, or
a whole raw body, that the server received into an anonymous temporary file before the
handler ran (svc.runtime.http.uploads). It holds the client's file name made safe, the
content type, the size and the open file, and nothing of its request, so a value that is
still referenced keeps no request alive. Its file is closed when its request ends, however
it ends (svc.runtime.http.connection); the compiler forbids storing an Upload anywhere it
could outlive the request (a class field, a list, a job's payload, a result).

Reading, hashing and moving the file run on a thread beside the event loop (the loop's
default executor): a large file would otherwise stall every other request. Each such call
duplicates the file's descriptor on the loop's thread first and hands the duplicate to the
thread, which closes it when done. So the request ending meanwhile (a 504 closes the
Upload's own descriptor while the thread still works) can neither make the thread read
another file that was given the same descriptor number, nor leave the duplicate open; and a
call whose coroutine is cancelled tells its thread to stop at the next chunk.

Result is unboxed, as everywhere in generated code: a function returns its value or an
`SvcError`.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import secrets
from collections.abc import Iterator
from typing import Any, Callable

from svc.runtime.lib.support import SvcError, SvcFault

#: The most `upload_read` reads into memory (64 MiB): a larger upload is moved, not read.
READ_LIMIT = 64 * 2**20
#: Bytes a thread reads (or copies) at a time, between two looks at its cancellation.
CHUNK = 2**20
#: The OS errors that mean the disk (or the user's quota) is full.
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
#: Where Linux shows a process's open files as links, through which an anonymous
#: (O_TMPFILE) file is given a name (linkat(2) with AT_SYMLINK_FOLLOW).
PROC_FD = "/proc/self/fd/"


class Upload:
    """One received file: `name` (the client's, made safe: svc.runtime.http.uploads.safe_name),
    `content_type`, `size` in bytes, and `file`, the open anonymous temporary file (None for
    an empty upload, which needs none). `closed` once its request has ended. `linked` once
    `upload_move` gave the file itself a name: a later move copies, so that two moves never
    make two names of one file."""

    __slots__ = ("name", "content_type", "size", "file", "closed", "linked")

    def __init__(self, name: str, content_type: str, file: Any = None, size: int = 0) -> None:
        self.name = name
        self.content_type = content_type
        self.file = file
        self.size = size
        self.closed = False
        self.linked = False

    def close(self) -> None:
        """Close the file (its request has ended); the value keeps its name, type and size."""
        self.closed = True
        file, self.file = self.file, None
        if file is not None:
            file.close()

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"Upload({self.name!r}, {self.content_type!r}, {self.size} bytes{state})"


# --- the facts ---------------------------------------------------------------------------------

def upload_name(u: Upload) -> str:
    """`upload_name(u)`: the client's file name reduced to a safe base name ("" for none)."""
    return u.name


def upload_type(u: Upload) -> str:
    """`upload_type(u)`: the part's Content-Type (the request's for a raw body), or
    "application/octet-stream" when none was sent."""
    return u.content_type


def upload_size(u: Upload) -> int:
    """`upload_size(u)`: the file's size in bytes."""
    return u.size


# --- the content, off the event loop -------------------------------------------------------------

async def upload_read(u: Upload) -> bytes | SvcError:
    """`upload_read(u)`: the whole content; an upload over 64 MiB is an internal error (it
    would take that much memory per request: move it instead)."""
    if u.size > READ_LIMIT:
        return SvcError("internal", "an upload over 64 MiB cannot be read into memory "
                                    "(use upload_move)")
    fd = _duplicate(u)
    if isinstance(fd, SvcError):
        return fd
    if fd is None:
        return b""
    return await _on_thread(_read_all, fd, u.size)


async def upload_sha256(u: Upload) -> str:
    """`upload_sha256(u)`: the SHA-256 of the content, in lower-case hex. (It has no error
    result: a temporary file that cannot be read is a fault, a 500 with the reason logged.)"""
    fd = _duplicate(u)
    if isinstance(fd, SvcError):
        raise SvcFault(f"upload_sha256: {fd.message}")
    if fd is None:
        return hashlib.sha256().hexdigest()
    outcome = await _on_thread(_sha256, fd, u.size)
    if isinstance(outcome, SvcError):
        raise SvcFault(f"upload_sha256: {outcome.message}")
    return outcome


async def upload_move(u: Upload, path: str) -> None | SvcError:
    """`upload_move(u, path)`: the content as the file `path`, which appears whole or not at
    all (a file already there is replaced). The folder must exist. The upload stays readable.

    The anonymous file is given a temporary name in the target's folder (linked, without a
    copy, when both are on one file system) and then renamed over `path`; otherwise it is
    copied to that temporary name, flushed to disk, and renamed. A full disk is a `busy`
    error, any other failure an `internal` one naming the path and the reason (the client
    sees only "internal error")."""
    if "\0" in path:
        return SvcError("invalid", "upload_move: the path holds a NUL character")
    fd = _duplicate(u)
    if isinstance(fd, SvcError):
        return fd
    link = fd is not None and not u.linked
    outcome = await _on_thread(_move, fd, u.size, path, link)
    if isinstance(outcome, SvcError):
        return outcome
    u.linked = u.linked or outcome
    return None


def _duplicate(u: Upload) -> int | None | SvcError:
    """A descriptor of the upload's file for a thread to own (None for an empty upload)."""
    if u.closed:
        return SvcError("internal", "the upload's request has ended: its file is closed")
    if u.file is None:
        return None
    return os.dup(u.file.fileno())


class _Stop:
    """Set by the loop when the awaiting coroutine was cancelled: the thread stops early."""

    __slots__ = ("asked",)

    def __init__(self) -> None:
        self.asked = False


async def _on_thread(work: Callable[..., Any], fd: int | None, *args: Any) -> Any:
    """`work(stop, fd, *args)` on the loop's default executor. `work` owns `fd` (closes it);
    shielded, so a cancelled caller cannot unqueue it before it ran (and leave `fd` open):
    it is told to stop instead."""
    stop = _Stop()
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(None, work, stop, fd, *args)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        stop.asked = True
        raise


# --- what the threads do (each closes its descriptor) -----------------------------------------

def _pieces(stop: _Stop, fd: int, size: int) -> Iterator[bytes]:
    """The file's bytes in CHUNK pieces, read at their offsets (the descriptor's position is
    shared with nobody's), until the end or the request gives up."""
    offset = 0
    while offset < size and not stop.asked:
        piece = os.pread(fd, min(CHUNK, size - offset), offset)
        if not piece:
            break
        yield piece
        offset += len(piece)


def _read_all(stop: _Stop, fd: int, size: int) -> bytes | SvcError:
    try:
        return b"".join(_pieces(stop, fd, size))
    except OSError as exc:
        return SvcError("internal", f"reading an upload failed: {_reason(exc)}")
    finally:
        os.close(fd)


def _sha256(stop: _Stop, fd: int, size: int) -> str | SvcError:
    try:
        digest = hashlib.sha256()
        for piece in _pieces(stop, fd, size):
            digest.update(piece)
        return digest.hexdigest()
    except OSError as exc:
        return SvcError("internal", f"hashing an upload failed: {_reason(exc)}")
    finally:
        os.close(fd)


def _move(stop: _Stop, fd: int | None, size: int, path: str, link: bool) -> bool | SvcError:
    """True when the file itself got the name (linked), False when copied, or the error."""
    folder = os.path.dirname(path) or "."
    temporary = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(6)}.upload")
    try:
        linked = link and _link(fd, temporary)
        if not linked:
            _copy(stop, fd, size, temporary)
        try:
            os.replace(temporary, path)
        except BaseException:
            _remove(temporary)
            raise
        return linked
    except OSError as exc:
        if exc.errno in NO_SPACE:
            return SvcError("busy", "no space left to store the upload")
        return SvcError("internal", f"cannot move the upload to {path!r}: {_reason(exc)}")
    finally:
        if fd is not None:
            os.close(fd)


def _link(fd: int | None, temporary: str) -> bool:
    """Give the anonymous file the name `temporary`, without copying; False where it cannot
    be (no /proc, another file system, a temporary file that is not an O_TMPFILE one)."""
    try:
        os.link(f"{PROC_FD}{fd}", temporary, follow_symlinks=True)
    except (OSError, NotImplementedError):
        return False
    return True


def _copy(stop: _Stop, fd: int | None, size: int, temporary: str) -> None:
    """The content into the new file `temporary`, flushed to disk; removed again on failure."""
    out = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        for piece in () if fd is None else _pieces(stop, fd, size):
            view = memoryview(piece)
            while view:
                view = view[os.write(out, view):]
        if stop.asked:
            raise OSError(errno.ECANCELED, "the request ended before the upload was moved")
        os.fsync(out)
    except BaseException:
        os.close(out)
        _remove(temporary)
        raise
    os.close(out)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)

