"""The program an executable carries after PyInstaller's archive (svc.launcher): attached and
read back byte for byte, refused when absent or damaged, and never mistaken for the archive's
cookie, which the bootloader finds by scanning back from the end of the file. The builds
themselves: tests/build."""

from __future__ import annotations

import marshal
import random

import pytest

from svc.launcher import (
    LENGTH_DIGITS, TRAILER_MAGIC, attach_program, attached_program, decode_program,
    encode_program,
)

#: PyInstaller's archive cookie magic (PyInstaller/archive/readers.py, the bootloader's too).
COOKIE_MAGIC = b"MEI\014\013\012\013\016"


def test_a_program_attached_after_the_archive_reads_back_whole(tmp_path):
    executable = tmp_path / "app"
    archive = b"\x7fELF..." + COOKIE_MAGIC + b"archive's cookie"
    executable.write_bytes(archive)
    code = [("app.svc", compile("x = 1", "app.svc", "exec"))]
    attach_program(str(executable), encode_program(code))
    assert executable.read_bytes().startswith(archive)  # the archive is left as it was
    (name, got), = decode_program(attached_program(str(executable)))
    assert name == "app.svc" and marshal.dumps(got) == marshal.dumps(code[0][1])


def test_the_cookie_magic_never_appears_after_the_archive_whatever_the_program(tmp_path):
    rng = random.Random(36)
    for size in (0, 1, 100, 70_000):
        executable = tmp_path / f"app{size}"
        executable.write_bytes(COOKIE_MAGIC)
        payload = COOKIE_MAGIC * 3 + rng.randbytes(size)  # the magic inside the program too
        attach_program(str(executable), payload)
        data = executable.read_bytes()
        assert data.rfind(COOKIE_MAGIC) == 0  # the scan from the end finds the archive's
        assert attached_program(str(executable)) == payload


@pytest.mark.parametrize("tail", [b"", b"short", b"x" * 100,
                                  b"%0*d" % (LENGTH_DIGITS, 10**9) + TRAILER_MAGIC,
                                  b"!!!!" + b"%0*d" % (LENGTH_DIGITS, 4) + TRAILER_MAGIC])
def test_a_missing_or_damaged_program_is_a_value_error(tmp_path, tail):
    executable = tmp_path / "app"
    executable.write_bytes(b"archive" + tail)
    with pytest.raises(ValueError):
        attached_program(str(executable))
