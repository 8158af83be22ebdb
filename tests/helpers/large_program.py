"""A generator of large, valid svc programs, for the `svcc check` speed benchmark.

    .venv/bin/python tests/helpers/large_program.py /tmp/big.svc 10000
    time .venv/bin/svcc check /tmp/big.svc
"""

from __future__ import annotations

import sys

_UNIT = '''class Item{n}:
    id: i64
    name: str
    score: f64
    note: str?

class Group{n}:
    name: str
    items: List[Item{n}]

def total{n}(group: Group{n}, limit: i64) -> i64:
    total = 0
    for item in group.items:
        if item.id > limit and item.score >= 0.5:
            total += item.id * 2 - 1
        elif item.note == None:
            total -= 1
        else:
            total = total + len(item.name)
    return total

def describe{n}(item: Item{n}) -> str:
    text = "item " + str(item.id) + ": " + item.name
    match item.note:
        case Some(note): text += " (" + note + ")"
        case None: pass
    return text

def parse{n}(text: str) -> Result[i64, Error]:
    n = try parse_i64(text)
    if n < 0:
        return error("negative: " + text)
    return ok(n)

@get("/items{n}/{{id}}")
async def get_item{n}(db: Db, id: i64) -> Result[Item{n}, Error]:
    match try await db_one[Item{n}](db, "SELECT * FROM items WHERE id = ?1", id):
        case Some(item): return ok(item)
        case None: return not_found("no item " + str(id))

'''
_MAIN = '''async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    item = Item0(id=1, name="a", score=1.0, note=None)
    print(describe0(item) + str(total0(Group0(name="g", items=[item]), 0)))
    return ok(())
'''


def generate(lines: int) -> str:
    """A program of at least `lines` lines: repeated units plus one `main`."""
    unit_lines = _UNIT.count("\n")
    units = max(1, -(-(lines - _MAIN.count("\n")) // unit_lines))
    return "".join(_UNIT.format(n=n) for n in range(units)) + _MAIN


if __name__ == "__main__":
    path = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    with open(path, "w", encoding="utf-8") as f:
        f.write(generate(count))
