"""Slicing (`x[a:b]`), `index_of` and the regular-expression builtins (`matches`, `find_all`,
`replace_re`), compiled and run through the real pipeline; their compile errors through the
real parser and checker. Expected values come from the definitions (UTF-8 byte offsets,
RE2's syntax), worked out by hand."""

from __future__ import annotations

import time

from svc.compiler.check.checker import check  # noqa: F401  (the checker the pipeline runs)
from svc.compiler.front.parser import parse
from svc.compiler.source import SourceFile
from svc.pipeline import check_modules
from svc.runtime.lib import stdlib


def lines(run, body: str) -> list[str]:
    source = "def main():\n" + "".join(f"    {line}\n" for line in body.splitlines())
    return run.output(source)


def diagnostics(body: str) -> list[tuple[int, int, str]]:
    """(line, column, message) of each diagnostic of `main` holding `body`."""
    text = "def main():\n" + "".join(f"    {line}\n" for line in body.splitlines())
    module, found = parse(SourceFile("t.svc", text))
    if not found:
        found = check_modules([module], "t.svc")[1]
    return [(d.span.line, d.span.col, d.message) for d in found]


# --- slicing ----------------------------------------------------------------------------------

def test_str_slices_count_utf8_bytes_like_len_and_index_of(run):
    assert lines(run, '''s = "zoë: ok"
i = index_of(s, ":")
print(str(i) + " [" + s[:i] + "] [" + s[i + 2:] + "] " + str(len(s[:i])))
print(s[0:2] + "|" + s[2:4] + "|" + s[:] + "|" + s[4:])''') == [
        "4 [zoë] [ok] 4", "zo|ë|zoë: ok|: ok"]


def test_a_bound_inside_a_character_moves_back_to_its_first_byte(run):
    # "é" is bytes 1..2 and "€" bytes 3..5 of "aé€b"
    assert lines(run, '''s = "aé€b"
print("[" + s[:2] + "] [" + s[2:] + "] [" + s[:4] + "] [" + s[5:] + "] [" + s[2:5] + "]")
for i in range(0, len(s) + 1):
    assert_eq(s[:i] + s[i:], s)
print(str(len(s[0:5])))''') == ["[a] [é€b] [aé] [€b] [é]", "3"]


def test_bounds_are_clamped_never_a_fault(run):
    assert lines(run, '''s = "abc"
print("[" + s[-5:2] + "] [" + s[1:99] + "] [" + s[2:1] + "] [" + s[9:] + "] [" + s[:-1] + "]")
xs = [1, 2, 3, 4]
print(str(len(xs[-9:9])) + " " + str(len(xs[3:1])) + " " + str(xs[1:3][1]) + " " + str(len(xs[:2])))
b = to_bytes("héllo")
print(str(len(b[1:3])) + " " + str(b[1:3][0]) + " " + str(len(b[4:])))
t = "ü"
print("[" + t[1:] + "] [" + t[:1] + "] [" + t[-1:9] + "]")''') == [
        "[ab] [bc] [] [] []", "4 0 3 2", "2 195 2", "[ü] [] [ü]"]


def test_a_slice_is_a_copy(run):
    assert lines(run, '''xs = [1, 2, 3]
ys = xs[:]
append(ys, 4)
print(str(len(xs)) + " " + str(len(ys)))''') == ["3 4"]


def test_slicing_what_cannot_be_sliced_is_a_compile_error():
    assert diagnostics('x = 5\nprint(str(x[1:2]))') == [
        (3, 15, "cannot slice i64: only a str, bytes or a List")]
    assert diagnostics('s = "abc"\nprint(s["a":])') == [
        (3, 13, "slice bound: expected i64, found str")]
    [(line, _, message)] = diagnostics('s = "abc"\nprint(s[1:2:3])')
    assert (line, message) == (3, "a slice has no step: write value[start:end]")


def test_slice_text_directly_on_edges():
    assert stdlib.slice_text("", 0, None) == ""
    assert stdlib.slice_text("é", 0, 1) == ""
    assert stdlib.slice_text("é", 1, 2) == "é"
    assert stdlib.slice_text("😀x", 3, None) == "😀x"
    assert stdlib.slice_text("😀x", 4, None) == "x"
    assert stdlib.slice_text("abc", -1, -1) == ""


# --- index_of ---------------------------------------------------------------------------------

def test_index_of_is_a_utf8_byte_offset_or_minus_one(run):
    assert lines(run, '''print(str(index_of("zoë!", "!")) + " " + str(index_of("abc", "x")) + " " + str(index_of("abc", "")) + " " + str(index_of("€€", "€")) + " " + str(index_of("a€€", "€€")))''') == [
        "4 -1 0 0 1"]


# --- regular expressions ----------------------------------------------------------------------

def test_matches_searches_anywhere_and_anchors_with_caret_dollar(run):
    assert lines(run, '''print(str(matches("order-12", "\\\\d+")) + " " + str(matches("order-12", "^\\\\d+$")) + " " + str(matches("12", "^\\\\d+$")))
print(str(matches("ÄB", "(?i)^äb$")) + " " + str(matches("é", "^\\\\pL$")) + " " + str(matches("é", "^\\\\w$")))''') == [
        "True False True", "True True False"]


def test_find_all_gives_whole_matches_left_to_right(run):
    assert lines(run, '''xs = find_all("k=1, k=22, z=333", "k=(\\\\d+)")
print(str(len(xs)) + " " + join(xs, "|"))
print(str(len(find_all("abc", "x"))) + " " + str(len(find_all("abc", "x*"))))''') == [
        "2 k=1|k=22", "0 4"]


def test_replace_re_expands_groups_as_go_does(run):
    assert lines(run, '''print(replace_re("zoe@example.org", "(?P<user>\\\\w+)@(\\\\w+)", "${user} at $2 ($0) $$1"))
print(replace_re("a-b", "(x)?-", "[$1]") + " " + replace_re("aaa", "a", "b") + " " + replace_re("ab", "", "-"))
print(replace_re("5 €", "€", "$ EUR"))''') == [
        "zoe at example (zoe@example) $1.org", "a[]b bbb -a-b-", "5 $ EUR"]


def test_a_catastrophic_pattern_on_a_long_input_does_not_hang(run):
    started = time.monotonic()
    assert lines(run, '''text = "a"
for i in range(0, 17):
    text = text + text
text = text + "!"
print(str(len(text)) + " " + str(matches(text, "^(a+)+$")) + " " + str(matches(text, "^(a|a)*$")) + " " + str(matches(text, "^(a*)*b")))
print(str(len(replace_re(text, "(a+)+b", "x"))))''') == ["131073 False False False", "131073"]
    assert time.monotonic() - started < 10


def test_an_invalid_literal_pattern_is_a_diagnostic_pointing_into_it():
    assert diagnostics('print(str(matches("x", "a(b")))') == [
        (2, 29, "invalid regular expression: missing ): a(b")]
    assert diagnostics('print(str(matches("x", "[z-a]")))') == [
        (2, 30, "invalid regular expression: invalid character class range: z-a")]
    [(_, _, message)] = diagnostics('print(str(matches("x", "(a)\\\\1")))')
    assert message == ("invalid regular expression: invalid escape sequence: \\1 "
                       "(backreferences are not supported: svc matches in linear time, "
                       "RE2's syntax)")
    [(_, _, message)] = diagnostics('print(join(find_all("x", "a(?!b)"), ""))')
    assert message.startswith("invalid regular expression: invalid perl operator: (?!")
    assert "lookaround is not supported" in message


def test_a_pattern_must_be_a_literal():
    assert diagnostics('p = "a+"\nprint(str(matches("x", p)))') == [
        (3, 28, "the pattern of matches must be a string literal (it is checked and "
                "compiled with the program)")]


def test_a_literal_replacement_naming_a_missing_group_is_a_diagnostic():
    assert diagnostics('print(replace_re("x", "(a)(?P<n>b)", "$1 $3 ${n} ${m}"))') == [
        (2, 42, "the replacement names ${3}, ${m}, but the pattern has no such group")]


def test_each_literal_pattern_is_compiled_once():
    from svc.rules import patterns
    first = patterns.compiled("^j5-[0-9]+$")
    assert patterns.compiled("^j5-[0-9]+$") is first
    assert stdlib.matches("j5-1", "^j5-[0-9]+$") and not stdlib.matches("j5-", "^j5-[0-9]+$")
