"""The checker's rules for topics and streams: `Topic[T]`, `Subscription[T]`, `Events[T]` and
`WebSocket[In, Out]`, the topic constants and the builtins that take them.

A topic is declared once, as a constant whose value is `topic("name")`: its name is checked
when the program is compiled (svc.rules.topic_names, the rule the topics service applies) and
so is every message published to it or received from it (its T), so a typo in a name or a
message of the wrong class never reaches a running server. Two constants may not declare one
name: the one declaration is what `svcc openapi` describes.

A subscription, an event stream and a WebSocket belong to the function (or request) that holds
them, like `Headers`: they may be passed to functions, never stored in a class field, a list or
a Map, nor returned. Their message types are what JSON carries (a WebSocket's may also be
`bytes`: binary frames).

The functions take what they work on as arguments (the `CheckContext`, or the `CallChecker`
checking a call), so this module imports neither the checker nor the body checker.
"""

from __future__ import annotations

from svc.compiler import builtin_table as B
from svc.compiler.check.context import CheckContext
from svc.compiler.front import syntax
from svc.compiler.program import TopicInfo
from svc.compiler.svctypes import (
    BYTES, STR, UNKNOWN, EventsOf, Opt, ResultOf, SocketOf, SubscriptionOf, TopicOf, Type,
    contains_stream, format_type, held_type, is_json_type,
)
from svc.rules.contract import close_code_problem
from svc.rules.topic_names import topic_name_problem

#: The type names this module resolves.
TYPE_NAMES = B.LIVE_TYPE_NAMES

_ARITY = {"Topic": 1, "Subscription": 1, "Events": 1, "WebSocket": 2}
_MESSAGE_TYPES = "a class, List, Map, number, str, bool or enum"


def resolve_type(ctx: CheckContext, texpr: syntax.NamedType, file: str) -> Type:
    """`Topic[T]`, `Subscription[T]`, `Events[T]` or `WebSocket[In, Out]` as written; UNKNOWN
    after an error."""
    name, arity = texpr.name, _ARITY[texpr.name]
    if len(texpr.args) != arity:
        wanted = "one type argument (its messages' type)" if arity == 1 else \
            "two type arguments (the messages it receives, the messages it sends)"
        ctx.error(f"type '{name}' takes {wanted}, found {len(texpr.args)}", texpr.span)
        return UNKNOWN
    args = [ctx.resolve_type(a, file) for a in texpr.args]
    for arg, written in zip(args, texpr.args):
        if arg == UNKNOWN:
            return UNKNOWN
        if isinstance(arg, Opt):
            ctx.error(f"the messages of a {name} cannot be optional ({format_type(arg)}): "
                      "receiving answers None once the stream is closed", written.span)
            return UNKNOWN
        binary = name == "WebSocket" and arg == BYTES
        if not binary and not is_json_type(arg, ctx.field_types):
            also = " or bytes" if name == "WebSocket" else ""
            ctx.error(f"the messages of a {name} are JSON values ({_MESSAGE_TYPES}){also}, "
                      f"found {format_type(arg)}", written.span)
            return UNKNOWN
    if name == "WebSocket":
        return SocketOf(args[0], args[1])
    return {"Topic": TopicOf, "Subscription": SubscriptionOf, "Events": EventsOf}[name](args[0])


def storage_problem(t: Type, where: str) -> str | None:
    """Why `t` may not be stored `where` ("in a class field", "in a list", ...), or None."""
    if contains_stream(t):
        return (f"{_outer_name(t)} cannot be stored {where}: it lives as long as the "
                "function or request that holds it (pass it to functions instead)")
    return None


def return_problem(function: str, t: Type) -> str | None:
    """Why a function may not return `t`, or None."""
    if contains_stream(t):
        return (f"function '{function}' cannot return {_outer_name(t)}: it lives as long as "
                "the function or request that holds it")
    return None


def _outer_name(t: Type) -> str:
    """The stream type `t` holds, with its article (it holds one: `contains_stream`)."""
    current: Type | None = t
    while current is not None:
        for cls, name in ((SubscriptionOf, "a Subscription"), (EventsOf, "an Events"),
                          (SocketOf, "a WebSocket")):
            if isinstance(current, cls):
                return name
        current = held_type(current)
    return "a stream"


# --- topic constants -------------------------------------------------------------------------

def check_topic_constant(ctx: CheckContext, decl: syntax.ConstDef, t: TopicOf) -> None:
    """`NAME: Topic[T] = topic("name")`: the value is that call with a literal name that can
    name a topic, declared by no other constant."""
    value = decl.value
    if not is_topic_call(value):
        ctx.error(f"the value of topic constant '{decl.name}' must be topic(\"name\")",
                  value.span)
        return
    assert isinstance(value, syntax.Call)
    value.call_kind, value.target = "builtin", "topic"
    value.type = t
    if len(value.args) != 1 or value.keywords or not isinstance(value.args[0], syntax.StrLit):
        ctx.error("topic takes one argument, the topic's name as a string literal",
                  value.span)
        return
    literal = value.args[0]
    literal.type = STR
    problem = topic_name_problem(literal.value)
    if problem is not None:
        ctx.error(problem, literal.span)
        return
    earlier = ctx.program.topics.get(literal.value)
    if earlier is not None:
        ctx.error(f"topic '{literal.value}' is declared twice: also by constant "
                  f"'{earlier.constant}' at {earlier.span.file}:{earlier.span.line}",
                  literal.span)
        return
    ctx.program.topics[literal.value] = TopicInfo(literal.value, t.message, decl.name,
                                                  decl.name_span)


def is_topic_call(e: syntax.Expr) -> bool:
    """Whether `e` is written `topic(...)`."""
    return isinstance(e, syntax.Call) and isinstance(e.func, syntax.Name) and e.func.id == "topic"


def topic_outside_constant(calls, call: syntax.Call) -> Type:
    """`topic(...)` anywhere but a topic constant's value."""
    calls.error("topic(\"name\") declares a topic: write it as a constant's value, "
                "NAME: Topic[T] = topic(\"name\")", call.span)
    calls.skip_args(call)
    return UNKNOWN


# --- builtin calls ---------------------------------------------------------------------------

def message_of(t: Type) -> Type:
    """The type of the messages a value of `t` is sent: T of a Topic[T], Events[T] or
    Subscription[T], Out of a WebSocket[In, Out]; UNKNOWN for any other type."""
    if isinstance(t, (TopicOf, EventsOf, SubscriptionOf)):
        return t.message
    if isinstance(t, SocketOf):
        return t.outgoing
    return UNKNOWN


def fits_kind(t: Type, kind: str) -> bool | None:
    """Whether `t` is of one of this module's kinds; None for another kind."""
    kinds = {B.TOPIC: TopicOf, B.SUBSCRIPTION: SubscriptionOf, B.EVENTS: EventsOf,
             B.SOCKET: SocketOf}
    wanted = kinds.get(kind)
    return None if wanted is None else isinstance(t, wanted)


def expected_argument(spec: str, earlier: list[Type]) -> Type | None:
    """The type an argument of kind MESSAGE or SOCKET_SUBSCRIPTION must have, given the
    arguments before it; None for another kind."""
    if spec == B.MESSAGE:
        return message_of(earlier[-1]) if earlier else UNKNOWN
    if spec == B.SOCKET_SUBSCRIPTION:
        first = earlier[0] if earlier else UNKNOWN
        return SubscriptionOf(first.outgoing) if isinstance(first, SocketOf) else UNKNOWN
    return None


def check_close_code(calls, call: syntax.Call) -> None:
    """`ws_close(ws, 1004, "...")`: a literal code the server would refuse is an error now."""
    if call.target == "ws_close" and len(call.args) >= 2 and isinstance(call.args[1], syntax.IntLit):
        problem = close_code_problem(call.args[1].value)
        if problem is not None:
            calls.error(f"ws_close: {problem}", call.args[1].span)


def result_of(rule: str, arg_types: list[Type]) -> Type | None:
    """The result type of `subscribe` and `receive`/`ws_receive`; None for another rule."""
    if rule == B.RESULT_SUBSCRIPTION:
        topic = arg_types[1] if len(arg_types) > 1 else UNKNOWN
        return ResultOf(SubscriptionOf(topic.message)) if isinstance(topic, TopicOf) \
            else UNKNOWN
    if rule == B.OPT_OF_MESSAGE:
        first = arg_types[0] if arg_types else UNKNOWN
        if isinstance(first, SubscriptionOf):
            return Opt(first.message)
        if isinstance(first, SocketOf):
            return Opt(first.incoming)
        return UNKNOWN
    return None
