"""Receiving a request body into temporary files: the bodies of routes with `Upload` parameters.

A route with `Upload` parameters (`ParamSource.UPLOAD`) has its body streamed to disk while
it arrives, never held in memory: the protocol (protocol.py) learns the route when the
request's headers are complete (`Router.body_terms`), asks the route's `UploadSpec` for a
receiver, and hands it each piece of the de-chunked body as the parser produces it. When the
body is whole the receiver becomes a `ReceivedForm` (its files and form fields) that travels
with the request (`Request.form`) to the binder (binding.py) and is closed when the request
ends (connection.py); a body refused midway closes its receiver at once (protocol.py).

    multipart/form-data   each part with a `filename` whose field name is an Upload
                          parameter goes to a file of its own (the first part of a name
                          counts; other file parts are read and dropped); parts without a
                          filename are form fields, kept in memory (at most BODY_LIMIT of
                          names and values, else 413) and bound like query parameters
    anything else         the whole body is the one Upload parameter of the route (name "",
                          the request's Content-Type); a route with two or more answers 415

Writing happens in the protocol callback, synchronously: a write(2) to a temporary file only
copies into the page cache, a few microseconds per 64 KiB piece (docs/decisions/http.md,
"Uploads"), less than parsing it; the kernel writes it back in the background. Temporary
files are anonymous (O_TMPFILE where the file system has it): nothing appears in the folder,
and a process that dies, even by `kill -9`, leaves nothing behind.

The multipart framing is python-multipart's streaming `MultipartParser` (its callbacks below);
its `parse_options_header` reads Content-Type and Content-Disposition values.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import tempfile
from typing import Any

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header

from svc.rules.contract import BODY_LIMIT, Param, ParamSource
from svc.runtime.http.binding import BindError
from svc.runtime.http.protocol import Reject
from svc.runtime.lib.uploads import NO_SPACE, Upload

#: Parts a multipart body may have (400 past it): each costs a little memory and time even
#: when dropped, and no form needs more.
PARTS_LIMIT = 1_000
#: Bytes of form fields (names and values) kept in memory for one request (413 past it).
FIELDS_LIMIT = BODY_LIMIT
#: The longest safe file name, in UTF-8 bytes (most file systems' limit for one name).
NAME_LIMIT = 255
DEFAULT_TYPE = "application/octet-stream"
#: The OS errors that mean the disk is full for us: no space or the quota (NO_SPACE, as
#: `upload_move` reads them), and the largest file the process may write (RLIMIT_FSIZE:
#: Python ignores SIGXFSZ, so a write fails with EFBIG).
DISK_FULL = NO_SPACE | {errno.EFBIG}
#: The errors of os.open(folder, O_TMPFILE) where the folder's file system has no O_TMPFILE.
_NO_TMPFILE = frozenset({errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL})
_O_TMPFILE: int | None = getattr(os, "O_TMPFILE", None)

MULTIPART = b"multipart/form-data"
UNSUPPORTED_MEDIA = "unsupported media type: expected multipart/form-data"
INSUFFICIENT_STORAGE = "insufficient storage"

# python-multipart logs a warning for every malformed body it sees; the client's 400 says it
# (and with no logging set up, Python would print each one on stderr beside the server log).
logging.getLogger("python_multipart").setLevel(logging.ERROR)


# --- what one route receives ---------------------------------------------------------------------

class UploadSpec:
    """The Upload parameters of one route, made once at start-up (routing.BodyTerms.uploads)."""

    __slots__ = ("names", "single")

    def __init__(self, params: tuple[Param, ...]) -> None:
        names = [p.name for p in params if p.source is ParamSource.UPLOAD]
        self.names = frozenset(names)
        #: the one Upload parameter, which a body that is not multipart fills; None when
        #: there are several
        self.single = names[0] if len(names) == 1 else None

    def receive(self, content_type: bytes | None) -> Receiver | Reject:
        """A receiver for a body of this Content-Type, or why the body is refused at once
        (before any of it is read, and before a `100 Continue`)."""
        media, options = parse_options_header(content_type)
        if media == MULTIPART:
            boundary = options.get(b"boundary")
            if not boundary:
                return Reject(400, "malformed multipart body: the Content-Type has no boundary")
            try:
                return MultipartReceiver(self, boundary)
            except FormParserError as exc:  # a boundary over 256 bytes
                return Reject(400, f"malformed multipart body: {short_reason(exc)}")
        if self.single is None:
            return Reject(415, UNSUPPORTED_MEDIA)
        ctype = content_type.decode("utf-8", "replace").strip() if content_type else ""
        return RawReceiver(self.single, ctype or DEFAULT_TYPE)

    def form_of(self, content_type: bytes | None, body: bytes) -> ReceivedForm:
        """The form of a body the protocol did not stream: a request without one (which
        never asks for a receiver). Raises BindError as a streamed body would be refused."""
        receiver = self.receive(content_type)
        if isinstance(receiver, Reject):
            raise BindError(receiver.status, receiver.reason)
        problem = receiver.write(body) if body else None
        outcome = receiver.finish() if problem is None else problem
        if isinstance(outcome, Reject):
            receiver.close()
            raise BindError(outcome.status, outcome.reason)
        return outcome


class ReceivedForm:
    """A body received whole: its files by Upload parameter name, its form fields by name
    (bytes, the first value of a name counts), closed when its request ends."""

    __slots__ = ("files", "fields")

    def __init__(self, files: dict[str, Upload], fields: dict[bytes, bytes]) -> None:
        self.files = files
        self.fields = fields

    def close(self) -> None:
        for upload in self.files.values():
            upload.close()

    def __repr__(self) -> str:
        return f"ReceivedForm({list(self.files.values())}, fields={list(self.fields)})"


class Receiver:
    """A body being received (the protocol calls these, in order): `write` each piece, then
    `finish` once, or `close` when the request ends first. `write` and `finish` answer a
    Reject when the body is refused; the protocol then closes the receiver at once."""

    def write(self, data: bytes) -> Reject | None:
        raise NotImplementedError

    def finish(self) -> ReceivedForm | Reject:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


# --- a raw body ----------------------------------------------------------------------------------

class RawReceiver(Receiver):
    """The whole body is the route's one upload."""

    __slots__ = ("name", "upload")

    def __init__(self, name: str, content_type: str) -> None:
        self.name = name
        self.upload = Upload("", content_type)

    def write(self, data: bytes) -> Reject | None:
        return store(self.upload, data, 0, len(data))

    def finish(self) -> ReceivedForm | Reject:
        return ReceivedForm({self.name: self.upload}, {})

    def close(self) -> None:
        self.upload.close()


# --- a multipart/form-data body ------------------------------------------------------------------

_FIELD, _FILE, _DROPPED = 1, 2, 3
_DISPOSITION, _TYPE = b"content-disposition", b"content-type"


class _Refused(Exception):
    """Raised inside a parser callback to stop the body with `reject`."""

    def __init__(self, reject: Reject) -> None:
        self.reject = reject


class MultipartReceiver(Receiver):
    """A multipart/form-data body, part by part (python-multipart's callbacks)."""

    def __init__(self, spec: UploadSpec, boundary: bytes) -> None:
        self.spec = spec
        self.files: dict[str, Upload] = {}
        self.fields: dict[bytes, bytes] = {}
        self.field_bytes = 0
        self.parts = 0
        self.ended = False
        # the part being read
        self.header_name = b""
        self.header_value = b""
        self.headers: dict[bytes, bytes] = {}
        self.kind = _DROPPED
        self.field_name = b""
        self.field_pieces: list[bytes] = []
        self.upload: Upload | None = None
        self.parser = MultipartParser(boundary, {
            "on_part_begin": self._part_begin,
            "on_header_field": self._header_field,
            "on_header_value": self._header_value,
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._part_data,
            "on_part_end": self._part_end,
            "on_end": self._end,
        })

    def write(self, data: bytes) -> Reject | None:
        try:
            self.parser.write(data)
        except _Refused as refused:
            return refused.reject
        except FormParserError as exc:
            return Reject(400, f"malformed multipart body: {short_reason(exc)}")
        return None

    def finish(self) -> ReceivedForm | Reject:
        if not self.ended:
            return Reject(400, "malformed multipart body: it ends before its closing boundary")
        return ReceivedForm(self.files, self.fields)

    def close(self) -> None:
        for upload in self.files.values():
            upload.close()

    # --- the parser's callbacks --------------------------------------------------------------

    def _part_begin(self) -> None:
        self.parts += 1
        if self.parts > PARTS_LIMIT:
            raise _Refused(Reject(400, "too many parts in the multipart body"))
        self.headers = {}
        self.kind = _DROPPED
        self.upload = None

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self.header_name += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self.header_value += data[start:end]

    def _header_end(self) -> None:
        name = self.header_name.lower()
        if name == _DISPOSITION or name == _TYPE:
            self.headers[name] = self.header_value
        self.header_name = self.header_value = b""

    def _headers_finished(self) -> None:
        disposition = self.headers.get(_DISPOSITION)
        if disposition is None:
            raise _malformed("a part has no Content-Disposition")
        kind, options = parse_options_header(disposition)
        if kind != b"form-data":
            raise _malformed("a part's Content-Disposition is not form-data")
        name = options.get(b"name")
        if name is None:
            raise _malformed("a part has no name")
        filename = options.get(b"filename")
        if filename is None:  # a form field
            self._count_field(len(name))
            self.kind = _FIELD
            self.field_name = name
            self.field_pieces = []
            return
        param = name.decode("utf-8", "replace")
        if param not in self.spec.names or param in self.files:
            return  # a file no parameter takes, or a second one of a name: read and dropped
        ctype = self.headers.get(_TYPE, b"").decode("utf-8", "replace").strip()
        self.upload = self.files[param] = Upload(safe_name(filename), ctype or DEFAULT_TYPE)
        self.kind = _FILE

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        kind = self.kind
        if kind == _FILE:
            upload = self.upload
            assert upload is not None
            problem = store(upload, data, start, end)
            if problem is not None:
                raise _Refused(problem)
        elif kind == _FIELD:
            self._count_field(end - start)
            self.field_pieces.append(data[start:end])

    def _part_end(self) -> None:
        if self.kind == _FIELD and self.field_name not in self.fields:
            self.fields[self.field_name] = b"".join(self.field_pieces)
        self.field_pieces = []
        self.kind = _DROPPED

    def _end(self) -> None:
        self.ended = True

    def _count_field(self, size: int) -> None:
        self.field_bytes += size
        if self.field_bytes > FIELDS_LIMIT:
            raise _Refused(Reject(413, "form fields too large"))


def _malformed(reason: str) -> _Refused:
    return _Refused(Reject(400, f"malformed multipart body: {reason}"))


_POSITION = re.compile(r" (?:\(\d+\)|at (?:index )?\d+)\Z")


def short_reason(exc: Exception) -> str:
    """python-multipart's message without the byte offset it ends with, lower-case first:
    "Did not find CR at end of boundary (40)" → "did not find CR at end of boundary"."""
    text = _POSITION.sub("", str(exc).strip()).rstrip(".")
    return text[:1].lower() + text[1:] if text else "unreadable"


# --- temporary files -----------------------------------------------------------------------------

def store(upload: Upload, data: bytes, start: int, end: int) -> Reject | None:
    """Append `data[start:end]` to the upload's file (made at its first byte); a full disk is
    507, any other failure 500, the OS's words only in the log (Reject.detail)."""
    if start == end:
        return None
    try:
        file = upload.file
        if file is None:
            file = upload.file = open_temporary()
        view = memoryview(data)[start:end]
        while view:
            view = view[file.write(view):]
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.errno in DISK_FULL:
            return Reject(507, INSUFFICIENT_STORAGE,
                          detail=f"an upload could not be stored: {reason}")
        return Reject(500, "internal error", detail=f"an upload could not be stored: {reason}")
    upload.size += end - start
    return None


def open_temporary() -> Any:
    """A new anonymous temporary file, unbuffered, in `tempfile.gettempdir()` (TMPDIR): an
    O_TMPFILE file, which never has a name, where the file system has them; else Python's
    TemporaryFile (a file removed as soon as it is made)."""
    folder = tempfile.gettempdir()
    if _O_TMPFILE is not None:
        try:
            fd = os.open(folder, _O_TMPFILE | os.O_RDWR, 0o600)
        except OSError as exc:
            if exc.errno not in _NO_TMPFILE:
                raise
        else:
            return open(fd, "r+b", buffering=0)
    return tempfile.TemporaryFile(buffering=0, dir=folder)


# --- file names ----------------------------------------------------------------------------------

#: C0 controls, DEL and C1 controls (NUL among them).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def safe_name(raw: bytes) -> str:
    """The client's file name as an Upload shows it: never a path. UTF-8 (bad bytes become
    U+FFFD), control characters removed, only what follows the last `/` or `\\`, "." and ".."
    made "", and at most 255 UTF-8 bytes (cut at a character boundary)."""
    text = _CONTROL.sub("", raw.decode("utf-8", "replace"))
    text = text[max(text.rfind("/"), text.rfind("\\")) + 1:]
    if text in (".", ".."):
        return ""
    encoded = text.encode("utf-8")
    if len(encoded) > NAME_LIMIT:
        text = encoded[:NAME_LIMIT].decode("utf-8", "ignore")
    return text
