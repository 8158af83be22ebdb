"""`upload_read`, `upload_sha256` and `upload_move` on real temporary files, made as the server
makes them (svc.runtime.http.uploads), in the folders of the test."""

from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
from pathlib import Path

import pytest

from svc.runtime.http.uploads import open_temporary, store
from svc.runtime.lib import uploads as u
from svc.runtime.lib.support import SvcError, SvcFault


@pytest.fixture
def tmpdir_of_uploads(tmp_path, monkeypatch):
    """The uploads' temporary files in a folder of this test (TMPDIR, as tempfile reads it)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def upload_of(data: bytes, name: str = "a.bin") -> u.Upload:
    upload = u.Upload(name, "application/octet-stream")
    assert store(upload, data, 0, len(data)) is None
    return upload


def run(coroutine):
    return asyncio.run(coroutine)


def proc_links_work(folder: Path) -> bool:
    """Whether this machine gives an anonymous file a name through /proc/self/fd (a chroot
    or a sandboxed /proc may answer EXDEV: then moves copy, and the tests say so)."""
    fd = os.open(folder, os.O_TMPFILE | os.O_RDWR, 0o600)
    try:
        os.link(f"/proc/self/fd/{fd}", folder / "probe", follow_symlinks=True)
    except OSError:
        return False
    finally:
        os.close(fd)
    os.unlink(folder / "probe")
    return True


def test_read_sha256_and_the_facts(tmpdir_of_uploads):
    data = os.urandom(3 * 2**20 + 17)
    upload = upload_of(data, "x.bin")
    assert (u.upload_name(upload), u.upload_type(upload), u.upload_size(upload)) == (
        "x.bin", "application/octet-stream", len(data))
    assert run(u.upload_read(upload)) == data
    assert run(u.upload_sha256(upload)) == hashlib.sha256(data).hexdigest()
    assert os.listdir(tmpdir_of_uploads) == []  # anonymous: nothing in the folder
    empty = u.Upload("", "text/plain")
    assert run(u.upload_read(empty)) == b""
    assert run(u.upload_sha256(empty)) == hashlib.sha256(b"").hexdigest()
    upload.close()


def test_read_refuses_over_64_mib_and_a_closed_upload_is_an_error():
    big = u.Upload("big", "x", size=u.READ_LIMIT + 1)
    err = run(u.upload_read(big))
    assert err == SvcError("internal", "an upload over 64 MiB cannot be read into memory "
                                       "(use upload_move)")
    closed = upload_of(b"abc")
    closed.close()
    assert isinstance(run(u.upload_read(closed)), SvcError)
    with pytest.raises(SvcFault):
        run(u.upload_sha256(closed))


def test_move_links_within_one_file_system_and_stays_readable(tmp_path, tmpdir_of_uploads):
    data = os.urandom(2**20)
    upload = upload_of(data)
    target = tmp_path / "kept" / "photo.jpg"
    target.parent.mkdir()
    assert run(u.upload_move(upload, str(target))) is None
    assert target.read_bytes() == data
    # the file itself got the name (no copy) where the machine allows it, else a copy
    assert upload.linked == proc_links_work(target.parent)
    assert run(u.upload_read(upload)) == data  # still readable
    # a second move copies: two names of one file would change together
    again = tmp_path / "kept" / "copy.jpg"
    target.write_bytes(b"replaced")  # what the first target holds is no business of the upload's
    assert run(u.upload_move(upload, str(again))) is None
    assert again.read_bytes() == data
    assert os.stat(again).st_ino != os.stat(target).st_ino
    assert sorted(os.listdir(target.parent)) == ["copy.jpg", "photo.jpg"]  # no temporary names
    upload.close()


def test_move_replaces_an_existing_file_whole(tmp_path, tmpdir_of_uploads):
    target = tmp_path / "same.txt"
    target.write_bytes(b"old")
    upload = upload_of(b"new content")
    assert run(u.upload_move(upload, str(target))) is None
    assert target.read_bytes() == b"new content"
    empty = u.Upload("", "text/plain")
    assert run(u.upload_move(empty, str(tmp_path / "empty"))) is None
    assert (tmp_path / "empty").read_bytes() == b""
    upload.close()


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs a second file system")
def test_move_across_file_systems_copies(tmp_path, monkeypatch):
    shm = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        if os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
            pytest.skip("/dev/shm is on the same file system here")
        monkeypatch.setattr(tempfile, "tempdir", str(shm))
        data = os.urandom(5 * 2**20)
        upload = upload_of(data)
        target = tmp_path / "across.bin"
        assert run(u.upload_move(upload, str(target))) is None
        assert target.read_bytes() == data and not upload.linked
        assert os.listdir(tmp_path) == ["across.bin"] and os.listdir(shm) == []
        upload.close()
    finally:
        os.rmdir(shm)


def test_move_errors(tmp_path, tmpdir_of_uploads):
    upload = upload_of(b"data")
    nul = run(u.upload_move(upload, str(tmp_path / "a\0b")))
    assert nul == SvcError("invalid", "upload_move: the path holds a NUL character")
    missing = run(u.upload_move(upload, str(tmp_path / "no" / "such" / "folder.txt")))
    assert missing.kind == "internal"
    assert "no/such/folder.txt" in missing.message and "No such file or directory" in missing.message
    into_folder = run(u.upload_move(upload, str(tmp_path)))
    assert into_folder.kind == "internal"
    assert os.listdir(tmp_path) == ["tmp"]  # no temporary name left behind
    upload.close()


def test_the_temporary_files_are_anonymous(tmpdir_of_uploads):
    file = open_temporary()
    try:
        target = os.readlink(f"/proc/self/fd/{file.fileno()}")
        assert target.startswith(str(tmpdir_of_uploads)) and target.endswith("(deleted)")
        assert os.listdir(tmpdir_of_uploads) == []
    finally:
        file.close()
