"""Language semantics (docs/reference/language.md §3–§6) of compiled programs, checked by what
they print."""


def test_integer_arithmetic_truncates_toward_zero(run):
    assert run.output("""
        def main():
            print(str(7 / 2) + " " + str(-7 / 2) + " " + str(7 / -2) + " " + str(-7 / -2))
            print(str(7 % 3) + " " + str(-7 % 3) + " " + str(7 % -3) + " " + str(-7 % -3))
            print(str(2 + 3 * 4 - -1))
            x = 10
            x += 5
            x -= 3
            x *= 2
            print(str(x))
    """) == ["3 -3 -3 3", "1 -1 1 -1", "15", "24"]


def test_i64_overflow_is_a_fault_naming_the_line(run):
    status, out, err = run("""
        def main():
            x = 9223372036854775807
            print("before")
            y = x + 1
            print("after")
    """)
    assert status == 1 and out == "before\n"
    assert err.startswith("error: integer overflow") and "prog.svc:5" in err
    assert "Traceback" not in err


def test_i32_overflow_and_narrowing(run):
    status, _, err = run("""
        def main():
            let x: i32 = 2147483647
            x += 1
    """)
    assert status == 1 and "overflow" in err
    assert run.output("""
        def main():
            big = 3000000000
            match i32(big):
                case Ok(v): print("fits " + str(v))
                case Err(e): print(error_kind(e))
            match i32(5):
                case Ok(v): print("fits " + str(v))
                case Err(e): print(error_kind(e))
            let a: i32 = 7
            print(str(i64(a) * 1000000000000))
            print(str(f64(a) / 2.0))
    """) == ["invalid", "fits 5", "7000000000000", "3.5"]


def test_division_by_zero_and_min_over_minus_one_fault(run):
    for expr in ("1 / zero", "1 % zero", "(-9223372036854775807 - 1) / (zero - 1)"):
        status, _, err = run(f"""
            def main():
                zero = 0
                print(str({expr}))
        """)
        assert status == 1 and err.startswith("error: "), expr


def test_floats(run):
    assert run.output("""
        def main():
            print(str(2.5) + " " + str(1.0 / 4.0) + " " + str(0.1 + 0.2))
            print(str(1.0 / 0.0) + " " + str(-7.5 % 2.0))
            print(str(1.5 < 2.5))
    """) == ["2.5 0.25 0.30000000000000004", "inf -1.5", "True"]


def test_strings(run):
    assert run.output("""
        def main():
            s = "héllo" + ", " + 'w\\u{1F600}'
            print(s)
            print(str(len(s)))
            print(str("abc" < "abd") + " " + str("a" == "a") + " " + str("a" != "b"))
            t = "x"
            t += "y"
            print(t + "\\t|")
    """) == ["héllo, w😀", "13", "True True True", "xy\t|"]


def test_lists_index_loops_and_fresh_loop_variables(run):
    assert run.output("""
        def main():
            xs = [1, 2, 3]
            append(xs, 4)
            xs[0] = 10
            total = 0
            for x in xs:
                total += x
            print(str(total) + " " + str(len(xs)) + " " + str(xs[3]))
            for i in range(2, 5):
                let seen: List[i64] = []
                append(seen, i)
                print(str(len(seen)) + ":" + str(seen[0]))
            n = 0
            while True:
                n += 1
                if n < 3:
                    continue
                elif n == 5:
                    break
            print(str(n))
            print(str([1, [2][0]] == [1, 2]) + " " + str([1] != [1]))
    """) == ["19 4 4", "1:2", "1:3", "1:4", "5", "True False"]


def test_negative_index_is_a_fault_not_python_wraparound(run):
    status, out, err = run("""
        def main():
            xs = [1, 2, 3]
            i = 0 - 1
            print(str(xs[i]))
    """)
    assert status == 1 and out == "" and "out of range" in err and "prog.svc:5" in err


def test_classes_are_shared_copies_are_deep_and_equality_structural(run):
    assert run.output("""
        class Box:
            n: i64
            items: List[str]
            label: str?

        def main():
            a = Box(n=1, items=["x"], label=None)
            b = a
            b.n = 2
            c = copy(a)
            append(c.items, "y")
            c.label = "c"
            print(str(a.n) + " " + str(len(a.items)) + " " + str(len(c.items)))
            print(str(a == b) + " " + str(a == c) + " " + str(a == Box(n=2, items=["x"], label=None)))
            print(str(a.label == None) + " " + str(c.label != None))
    """) == ["2 1 2", "True False True", "True True"]


def test_match_try_and_errors(run):
    assert run.output("""
        def half(n: i64) -> Result[i64, Error]:
            if n % 2 != 0:
                return error("odd: " + str(n))
            return ok(n / 2)

        def quarter(n: i64) -> Result[i64, Error]:
            h = try half(n)
            return ok(try half(h))

        def find(n: i64) -> i64?:
            if n > 0:
                return n
            return None

        def show(r: Result[i64, Error]) -> str:
            match r:
                case Ok(v): return "ok " + str(v)
                case Err(e): return error_kind(e) + " " + error_message(e)

        def main():
            print(show(quarter(8)))
            print(show(quarter(6)))
            print(show(not_found("gone")))
            match find(0):
                case Some(v): print("some " + str(v))
                case None: print("none")
            match find(3):
                case Some(v): print("some " + str(v))
                case None: print("none")
    """) == ["ok 2", "invalid odd: 3", "not_found gone", "none", "some 3"]


def test_err_from_main_exits_1(run):
    status, out, err = run("""
        def boom() -> Result[i64, Error]:
            return internal_error("boom")

        async def main() -> Result[unit, Error]:
            print("start")
            x = try boom()
            print("never " + str(x))
            return ok(())
    """)
    assert (status, out, err) == (1, "start\n", "error: boom\n")


def test_async_main_sleep_and_bools(run):
    assert run.output("""
        async def twice(n: i64) -> i64:
            await sleep(1)
            return n * 2

        async def main() -> Result[unit, Error]:
            print(str(await twice(21)))
            print(str(True and not False) + " " + str(False or False))
            return ok(())
    """) == ["42", "True False"]


def test_json_encode_and_strict_decode(run):
    assert run.output("""
        class User:
            id: i64
            name: str
            age: i32

        def report(text: str) -> str:
            match json_decode[User](text):
                case Ok(u): return "ok " + json_encode(u)
                case Err(e): return error_kind(e)

        def main():
            print(json_encode(User(id=1, name="ada", age=36)))
            print(report("{\\"id\\": 2, \\"name\\": \\"bo\\", \\"age\\": 3}"))
            print(report("{\\"id\\": true, \\"name\\": \\"bo\\", \\"age\\": 3}"))
            print(report("{\\"id\\": 2, \\"name\\": \\"bo\\", \\"age\\": 3000000000}"))
            print(report("{\\"id\\": 2, \\"name\\": \\"bo\\"}"))
            print(report("{\\"id\\": 2, \\"name\\": \\"bo\\", \\"age\\": 3, \\"x\\": 1}"))
            print(report("nope"))
            match json_decode[List[i64]]("[1, 2]"):
                case Ok(xs): print(str(len(xs)))
                case Err(e): print(error_message(e))
            print(json_encode([1, 2]) + json_encode("q") + json_encode(True))
    """) == ['{"id":1,"name":"ada","age":36}', 'ok {"id":2,"name":"bo","age":3}',
             "invalid", "invalid", "invalid", "invalid", "invalid", "2", '[1,2]"q"true']


def test_recursion_parse_and_env(run, monkeypatch):
    monkeypatch.setenv("SVC_SEMANTICS_TEST", "41")
    assert run.output("""
        def fib(n: i64) -> i64:
            if n < 2:
                return n
            return fib(n - 1) + fib(n - 2)

        def main():
            print(str(fib(20)))
            match parse_i64(env("SVC_SEMANTICS_TEST", "0")):
                case Ok(v): print(str(v + 1))
                case Err(e): print(error_message(e))
            print(env("SVC_SURELY_UNSET_VARIABLE", "dflt"))
    """) == ["6765", "42", "dflt"]


def test_deep_recursion_works_to_thousands_of_calls(run):
    assert run.output("""
        def depth(n: i64) -> i64:
            if n == 0:
                return 0
            return 1 + depth(n - 1)

        async def adepth(n: i64) -> i64:
            if n == 0:
                return 0
            return 1 + await adepth(n - 1)

        async def main() -> Result[unit, Error]:
            print(str(depth(5000)) + " " + str(await adepth(5000)))
            return ok(())
    """) == ["5000 5000"]


def test_runaway_recursion_is_a_fault(run):
    status, _, err = run("""
        def down(n: i64) -> i64:
            return down(n + 1)

        def main():
            print(str(down(0)))
    """)
    assert status == 1 and err.startswith("error: ") and "Traceback" not in err


def test_nested_checked_arithmetic(run):
    assert run.output("""
        def main():
            x = 10
            let y: i32 = 46340
            print(str((x + 1) * (x - 1) - (x * 2 + 1)))
            print(str(y * y))
            print(str(-x * -x + (0 - 9223372036854775807)))
    """) == ["78", "2147395600", "-9223372036854775707"]
    status, _, err = run("""
        def main():
            let y: i32 = 46341
            print(str(y * y))
    """)
    assert status == 1 and "integer overflow (i32)" in err


def test_runtime_test_functions_are_linked(run):
    lines = run.output("""
        async def main() -> Result[unit, Error]:
            print(str(try await task_demo(5)))
            print(str(try await scope_demo(5)))
            print(str(try await actor_demo(5)))
            print(str(try await actor_pair_demo(5)))
            print(str(try await supervisor_demo()))
            print(str(try await queue_demo(5)))
            return ok(())
    """)
    assert len(lines) == 6 and all(line.lstrip("-").isdigit() for line in lines)


def test_names_python_would_treat_specially(run):
    """Python keywords, builtins and `__private` names are ordinary svc identifiers."""
    assert run.output("""
        class lambda:
            yield: i64
            __secret: str
            _: bool

        def isinstance(x: i64) -> i64:
            return x + 1

        def helper() -> i64:
            return 3

        def global(del: i64) -> lambda:
            with = del * 2
            a = helper()
            helper = 5
            return lambda(yield=with + a + helper, __secret="s", _=True)

        def main():
            v = global(4)
            v.__secret += "!"
            print(json_encode(v) + " " + str(isinstance(1)))
            match json_decode[lambda]("{\\"yield\\": 3, \\"__secret\\": \\"x\\", \\"_\\": false}"):
                case Ok(w): print(str(w.yield) + w.__secret + str(w._))
                case Err(e): print(error_message(e))
    """) == ['{"yield":16,"__secret":"s!","_":true} 2', "3xFalse"]
