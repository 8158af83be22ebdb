"""The field rules' tests and messages (svc.rules.field_rules) and the check built per type
(svc.rules.field_checks): None for a type no rule is reachable from, every failure by path
otherwise, classes that refer to themselves included."""

from __future__ import annotations

from typing import Optional

import msgspec

from svc.rules.field_checks import checker_of
from svc.rules import field_rules
from svc.rules.field_rules import BYTES, ITEMS, Rule, message


class Leaf(msgspec.Struct):
    __svc_rules__ = (("name", "name", (("length", (1, 3), "bytes"), ("pattern", ("[a-z]+",), ""))),)
    name: str


class Tree(msgspec.Struct):
    __svc_rules__ = (("size", "size", (("range", (0, 9), ""),)),)
    size: int
    kids: "list[Tree]"
    leaf: Optional[Leaf]
    tags: dict[str, Leaf]


class Plain(msgspec.Struct):
    n: int
    me: "Optional[Plain]"


def test_messages_and_tests():
    assert message(Rule("length", (1, 240), BYTES)) == "must be 1 to 240 bytes long"
    assert message(Rule("length", (1, 3), ITEMS)) == "must have 1 to 3 items"
    assert message(Rule("range", (0.0, 1.5))) == "must be between 0.0 and 1.5"
    assert message(Rule("one_of", ("a", "b"))) == "must be one of: a, b"
    passes = field_rules.test_of
    assert passes(Rule("length", (1, 2), BYTES))("é") and not passes(
        Rule("length", (1, 1), BYTES))("é")
    assert passes(Rule("length", (1, 2), BYTES))(b"ab")
    assert not passes(Rule("pattern", ("[a-z]+",)))("ab1")


def test_a_type_without_rules_has_no_check():
    assert checker_of(Plain) is None
    assert checker_of(list[Plain]) is None
    assert checker_of(int) is None


def test_every_failure_by_path_through_a_recursive_class():
    check = checker_of(Tree)
    tree = Tree(size=10, kids=[Tree(size=1, kids=[], leaf=Leaf(name="ABCD"), tags={})],
                leaf=None, tags={"k": Leaf(name="")})
    assert check(tree) == {"size": "must be between 0 and 9",
                           "kids[0].leaf.name": "must be 1 to 3 bytes long",
                           'tags["k"].name': "must be 1 to 3 bytes long"}
    assert check(Tree(size=0, kids=[], leaf=Leaf(name="ab"), tags={})) == {}
    assert checker_of(Optional[Tree])(None) == {}
