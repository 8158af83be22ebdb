"""Random integer expressions, compiled and run, against a reference evaluator with the
language's rules (checked i64, `/` truncating toward zero, `%` with the dividend's sign)."""

from __future__ import annotations

import random

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
LEAVES = [0, 1, 2, 3, 7, 10, 1000, 2**31, 2**40, 3037000499, I64_MAX]
FAULT = None  # the reference value of an expression that faults


def _div(a: int, b: int):
    if b == 0:
        return FAULT
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _checked(v):
    return v if v is not FAULT and I64_MIN <= v <= I64_MAX else FAULT


def _apply(op: str, a, b):
    if a is FAULT or b is FAULT:
        return FAULT
    if op == "/":
        return _checked(_div(a, b))
    if op == "%":
        q = _div(a, b)
        return FAULT if q is FAULT else a - b * q
    return _checked({"+": a + b, "-": a - b, "*": a * b}[op])


def expression(rng: random.Random, depth: int):
    """(svc text, reference value or FAULT)."""
    if depth == 0 or rng.random() < 0.25:
        value = rng.choice(LEAVES)
        return (f"v{value}" if rng.random() < 0.5 else str(value)), value
    op = rng.choice("+-*/%")
    left, lv = expression(rng, depth - 1)
    right, rv = expression(rng, depth - 1)
    if rng.random() < 0.2:
        left, lv = f"-{left}", (FAULT if lv is FAULT else -lv)
    return f"({left} {op} {right})", _apply(op, lv, rv)


PRELUDE = "def main():\n" + "".join(f"    v{n} = {n}\n" for n in LEAVES)


def test_random_expressions_match_the_reference(run):
    rng = random.Random(20261122)
    cases = []
    while len(cases) < 200:
        text, value = expression(rng, 4)
        if value is not FAULT:
            cases.append((text, value))
    program = PRELUDE + "".join(f"    print(str({text}))\n" for text, _ in cases)
    assert run.output(program) == [str(v) for _, v in cases]


def test_random_faulting_expressions_exit_1(run):
    rng = random.Random(7)
    faulting = []
    while len(faulting) < 6:
        text, value = expression(rng, 3)
        if value is FAULT:
            faulting.append(text)
    for text in faulting:
        status, out, err = run(PRELUDE + f"    print(str({text}))\n")
        assert (status, out) == (1, ""), text
        assert err.startswith("error: ") and "prog.svc:" in err, (text, err)
