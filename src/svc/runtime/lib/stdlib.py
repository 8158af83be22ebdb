"""The standard library: text, lists, numbers, time, randomness and hashing.

Generated code calls these as `_svc_stdlib.<name>` (each builtin's record in
compiler/builtin_table.py names its function here). The checker has already made sure of every
argument's type, so nothing here checks types; what is checked is what only the run time can
know.
Failures follow the language's two ways: a builtin whose svc result is a `Result` returns an
`SvcError` (kind `invalid`), any other raises `SvcFault` (a 500 in a handler, exit 1 out of
`main`). Kept apart from support.py so that module stays the small core of the runtime.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import math
import re
import secrets
import time
import uuid

from svc.rules import patterns
from svc.rules.contract import I32_MIN, I64_MIN
from svc.runtime.lib.support import SvcError, SvcFault

# --- text ------------------------------------------------------------------------------------

#: The characters with Unicode's White_Space property (what Go's TrimSpace and Rust's trim
#: remove). Python's own str.strip() also removes the ASCII separators U+001C..U+001F.
WHITESPACE = ("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
              "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def trim(s: str) -> str:
    return s.strip(WHITESPACE)


def lower(s: str) -> str:
    return s.lower()


def upper(s: str) -> str:
    return s.upper()


def contains(container, part) -> bool:
    """`contains(s, part)` on a str; `contains(xs, v)` on a List, by `==` (so a NaN is never
    found, unlike Python's `in`, which also tests identity); `contains(m, key)` on a Map."""
    if container.__class__ is str or container.__class__ is dict:
        return part in container
    for item in container:
        if item == part:
            return True
    return False


def starts_with(s: str, prefix: str) -> bool:
    return s.startswith(prefix)


def ends_with(s: str, suffix: str) -> bool:
    return s.endswith(suffix)


def replace(s: str, old: str, new: str) -> str:
    """Every non-overlapping `old`, left to right; an empty `old` changes nothing (Python
    would insert `new` between every two characters)."""
    if not old:
        return s
    return s.replace(old, new)


def split(s: str, sep: str) -> list:
    """`s` cut at every `sep`; an empty `sep` gives `[s]` (Python raises, Go splits into
    characters). `split("", ",")` is `[""]`, as in Python, Go and Rust."""
    if not sep:
        return [s]
    return s.split(sep)


def join(parts: list, sep: str) -> str:
    return sep.join(parts)


_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def parse_f64(text: str) -> float | SvcError:
    """Decimal text (`2.5`, `-1e-3`, `.5`, `7`) to f64. No blanks, no `_`, no `inf`/`nan`; a
    number too large for a double (`1e999`) is refused rather than becoming inf."""
    if not _FLOAT_TEXT.fullmatch(text):
        return SvcError("invalid", f"not a number: {_shown(text)}")
    value = float(text)
    if math.isinf(value):
        return SvcError("invalid", f"number out of range for f64: {_shown(text)}")
    return value


def to_bytes(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")  # as `len` counts them


def to_str(data) -> str | SvcError:
    """UTF-8 bytes (or a view of them) to str; invalid UTF-8 is an `invalid` error naming the
    offset of the first bad byte."""
    try:
        return str(data, "utf-8")
    except UnicodeDecodeError as exc:
        return SvcError("invalid", f"not valid UTF-8 (bad byte at offset {exc.start})")


def index_of(s: str, part: str) -> int:
    """Where part first occurs in s, in UTF-8 bytes (as `len` and `s[a:b]` count), or -1."""
    i = s.find(part)
    if i <= 0 or s.isascii():
        return i
    return len(s[:i].encode("utf-8", "surrogatepass"))


def slice_text(s: str, start: int, end: int | None) -> str:
    """`s[start:end]` in UTF-8 bytes: both bounds clamped to `0..len(s)` as `slice` clamps, then
    moved back to the first byte of the character they fall in, so a slice never cuts a
    character (and `s[:i] + s[i:] == s` for every i). Never a fault."""
    if s.isascii():
        return s[max(start, 0):end if end is None or end >= 0 else 0]
    data = s.encode("utf-8", "surrogatepass")
    n = len(data)
    start = _character_start(data, min(max(start, 0), n))
    end = n if end is None else _character_start(data, min(max(end, 0), n))
    return data[start:end].decode("utf-8", "surrogatepass") if start < end else ""


def _character_start(data: bytes, i: int) -> int:
    """i, or the offset of the first byte of the UTF-8 character byte i is inside of."""
    while i < len(data) and data[i] & 0xC0 == 0x80:  # a continuation byte
        i -= 1
    return i


def _shown(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


# --- lists -----------------------------------------------------------------------------------

def slice_(xs, start: int, end: int | None):
    """A new list (or bytes) of `xs[start:end]` with both bounds clamped to `0..len(xs)`: never
    a fault, and no Python negative indexing (`slice(xs, -2, 9)` is the whole of a short list).
    `slice(xs, a, b)` and `xs[a:b]` (end None when left out) both come here."""
    n = len(xs)
    start = min(max(start, 0), n)
    end = n if end is None else min(max(end, 0), n)
    return xs[start:end]


def _nan_last(x: float) -> tuple:
    return (x != x, x)


def sorted_(xs: list) -> list:
    """Ascending: numbers by value, str by code point (the same order as their UTF-8 bytes).
    NaNs go last, so the order is total; the sort is stable."""
    if xs and xs[0].__class__ is float:
        return sorted(xs, key=_nan_last)
    return sorted(xs)


def reversed_(xs: list) -> list:
    return xs[::-1]


# --- numbers ---------------------------------------------------------------------------------

def min_(a, b):
    """The smaller; for f64 a NaN wins and -0.0 is below 0.0 (IEEE 754 minimum, Go's Min)."""
    if a.__class__ is float:
        if a != a or b != b:
            return math.nan
        if a == b == 0.0:
            return a if math.copysign(1.0, a) < 0 else b
    return b if b < a else a


def max_(a, b):
    """The larger; for f64 a NaN wins and 0.0 is above -0.0 (IEEE 754 maximum, Go's Max)."""
    if a.__class__ is float:
        if a != a or b != b:
            return math.nan
        if a == b == 0.0:
            return a if math.copysign(1.0, a) > 0 else b
    return b if b > a else a


def abs64(x: int) -> int:
    if x == I64_MIN:
        raise SvcFault("integer overflow (i64): abs of the minimum i64")
    return -x if x < 0 else x


def abs32(x: int) -> int:
    if x == I32_MIN:
        raise SvcFault("integer overflow (i32): abs of the minimum i32")
    return -x if x < 0 else x


def absf(x: float) -> float:
    return math.fabs(x)


# --- time ------------------------------------------------------------------------------------

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
#: The times RFC 3339 can write (years 0001..9999), in Unix milliseconds.
MIN_RFC3339_MS = -62_135_596_800_000
MAX_RFC3339_MS = 253_402_300_799_999


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def rfc3339(ms: int) -> str:
    """`2026-11-23T15:04:05.123Z`: UTC, always three fraction digits. A time outside years
    0001..9999 has no RFC 3339 form: a fault."""
    if not MIN_RFC3339_MS <= ms <= MAX_RFC3339_MS:
        raise SvcFault(f"rfc3339: {ms} ms is outside the years 0001..9999")
    t = _EPOCH + datetime.timedelta(milliseconds=ms)
    return (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:"
            f"{t.second:02d}.{t.microsecond // 1000:03d}Z")


_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]{1,9}))?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))", re.ASCII)


def parse_rfc3339(text: str) -> int | SvcError:
    """An RFC 3339 time (`Z` or `±hh:mm`, 0 to 9 fraction digits) to Unix milliseconds; a
    fraction finer than a millisecond is cut off (rounded toward the past)."""
    m = _RFC3339.fullmatch(text)
    if m is None:
        return SvcError("invalid", f"not an RFC 3339 time: {_shown(text)}")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction, zulu, sign, off_h, off_m = m.group(7, 8, 9, 10, 11)
    if zulu is None and (int(off_h) > 23 or int(off_m) > 59):
        return SvcError("invalid", f"not an RFC 3339 time (bad offset): {_shown(text)}")
    try:
        local = datetime.datetime(year, month, day, hour, minute, second,
                                  tzinfo=datetime.timezone.utc)
    except ValueError as exc:  # month 13, February 30, second 60, ...
        return SvcError("invalid", f"not an RFC 3339 time ({exc}): {_shown(text)}")
    offset = 0 if zulu else (int(off_h) * 60 + int(off_m)) * (1 if sign == "+" else -1)
    seconds = (local - _EPOCH) // datetime.timedelta(seconds=1) - offset * 60
    millis = int((fraction or "0").ljust(3, "0")[:3])
    return seconds * 1000 + millis


# --- randomness and hashing ------------------------------------------------------------------

MAX_TOKEN_BYTES = 1024


def uuid4() -> str:
    return str(uuid.uuid4())


def random_token(n: int) -> str:
    """`n` random bytes from the OS's secure generator as URL-safe base64 without padding.
    The result is a plain str, so an `n` outside 1..1024 is a fault (a program error)."""
    if not 1 <= n <= MAX_TOKEN_BYTES:
        raise SvcFault(f"random_token: n must be 1 to {MAX_TOKEN_BYTES}, got {n}")
    return secrets.token_urlsafe(n)


def _data(x) -> bytes:
    return x.encode("utf-8", "surrogatepass") if x.__class__ is str else x


def sha256_hex(x) -> str:
    return hashlib.sha256(_data(x)).hexdigest()


def hmac_sha256_hex(key, message) -> str:
    return hmac.new(_data(key), _data(message), hashlib.sha256).hexdigest()


def constant_time_eq(a: str, b: str) -> bool:
    """Equality whose time does not depend on where the texts differ (for tokens and MACs);
    texts of different lengths are unequal at once, as with hmac.compare_digest."""
    return hmac.compare_digest(_data(a), _data(b))


# --- regular expressions (the dialect: svc/rules/patterns.py) ----------------------------------------

def matches(text: str, pattern: str) -> bool:
    """Whether pattern matches anywhere in text (anchor it with ^...$ for the whole)."""
    return patterns.compiled(pattern).search(text) is not None


def find_all(text: str, pattern: str) -> list:
    """The text of every non-overlapping match, left to right."""
    return [m.group(0) for m in patterns.compiled(pattern).finditer(text)]


def replace_re(text: str, pattern: str, replacement: str) -> str:
    """Every non-overlapping match replaced by replacement, its `$1`/`${name}` expanded."""
    pieces = patterns.parse_replacement(replacement)
    return patterns.compiled(pattern).sub(lambda m: patterns.expand(pieces, m), text)
