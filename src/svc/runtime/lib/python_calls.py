"""Calling Python functions an svc program declares with `@python(module, attribute)`.

(Skeleton: the interface code generation targets; the boundary itself is being built.)
"""

from __future__ import annotations

from typing import Any, Callable


def function(name: str, module: str, attribute: str, error_kind: str,
             param_types: tuple[Any, ...], result_type: Any, where: str) -> Callable[..., Any]:
    """The svc function `name` declared at `where` ("file.svc:LINE"): an `async def` that takes
    its svc arguments positionally and returns the value of its `Result[T, Error]` (T's
    runtime value) or an `SvcError`."""
    raise NotImplementedError


def python_stub(name: str, answer: Any) -> None:
    """`python_stub(f, answer)` in a test file: calls of the `@python` function `f` return
    `answer` (a value of its result type, an `SvcError` for an `Err`) for the rest of the
    test."""
    raise NotImplementedError
