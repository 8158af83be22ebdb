"""The builtins' records (compiler/builtin_table.py) against what they point at: every runtime
function a record names exists, every special form has its code generator, and the error
kinds a record lists are those of a builtin that makes errors."""

from __future__ import annotations

import importlib

from svc.compiler import builtin_table as B
from svc.compiler.codegen.builtin_calls import SPECIAL_FORMS
from svc.compiler.svctypes import ResultOf
from svc.runtime.lib.support import STATUS_BY_KIND

_RESULT_OF_TYPE_ARG = {B.RESULT_OF_TYPE_ARG, B.RESULT_LIST_OF_TYPE_ARG, B.RESULT_OPT_OF_TYPE_ARG,
                       B.RESULT_SUBSCRIPTION}


def test_every_runtime_function_a_record_names_exists():
    lowerings = [(b.name, b.lowering) for b in B.BUILTINS.values()]
    lowerings.append((B.RANGE, B.RANGE_LOWERING))
    for name, lowering in lowerings:
        if isinstance(lowering, B.RuntimeCall):
            module = importlib.import_module(f"svc.runtime.{lowering.module}")
            assert callable(getattr(module, lowering.function, None)), name


def test_every_special_form_has_its_code_generator():
    used = {b.lowering for b in B.BUILTINS.values() if isinstance(b.lowering, B.SpecialForm)}
    assert used == set(SPECIAL_FORMS)


def test_a_builtin_lists_error_kinds_exactly_when_it_makes_errors():
    """A builtin whose result is a Result makes errors (`ok` and `fail` only pass a value or
    an error on); the kinds are the language's."""
    for b in B.BUILTINS.values():
        makes_errors = (isinstance(b.returns, ResultOf) or b.returns in _RESULT_OF_TYPE_ARG
                        or b.returns == B.ERROR_OR_RESULT)
        assert bool(b.errors) == makes_errors, b.name
        assert b.errors <= set(STATUS_BY_KIND), b.name

