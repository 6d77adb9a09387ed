"""A model's Jinja chat template, reduced to per-role prefix and suffix strings.

The runtime (C++) renders chats without a Jinja engine: it needs only

    head + [default_system, when the first message is not a system message]
         + for each message: prefix[role] + content + suffix[role]
           (a system message after the first message: system_later's prefix and suffix)
         + [generation_prompt, when the assistant is to answer]

system_later is None when the template refuses a system message that is not first, or renders
one in a way the form cannot express; the runtime then refuses such a message.

This module renders the template with jinja2 (as Hugging Face does: sandboxed, trim_blocks,
lstrip_blocks) on marker messages, reads those strings off the output, and then checks the
reduced form against the full template on several multi-turn conversations. A template
that the form cannot express exactly (content-dependent logic, say) is refused: the
package then has no chat format, and the runtime says so instead of chatting wrongly.
"""
from __future__ import annotations

import datetime

import jinja2
import jinja2.nodes
import jinja2.sandbox
import jinja2.visitor

ROLES = ("system", "user", "assistant")

# A render's work is bounded by counts, not by a clock, so that whether a package gets a chat
# format never depends on the machine that plans it. A template that loops more than
# LOOP_BUDGET times in one render, or builds a string, list or integer past the sizes below
# with `*`, `**`, `+` or `~`, fails to render (no chat format), instead of running for hours
# (nested range(100000) loops: 10^10 steps) or doubling a string until the memory is full. Real
# templates loop over the few messages rendered here. Not bounded: a filter given a huge
# width, such as center(10**9), still makes that one string.
LOOP_BUDGET = 100_000  # for-loop iterations in one render, all loops together
MAX_LENGTH = 1_000_000  # items of a string or list made by `*`, `+` or `~`
MAX_INT_BITS = 4096  # bits of an integer made by `*` or `**`


class ChatTemplateError(ValueError):
    """The template cannot be reduced to prefix/suffix strings, or does not render."""


def _too_long(what: str) -> jinja2.exceptions.SecurityError:
    return jinja2.exceptions.SecurityError(f"{what} would be longer than {MAX_LENGTH} items")


class _BudgetedEnvironment(jinja2.sandbox.ImmutableSandboxedEnvironment):
    """Hugging Face's sandbox, with `*`, `**` and `+` checked for the sizes they would make
    (the sandbox's own range() stops at 100,000 items; nothing else was bounded)."""

    intercepted_binops = frozenset(["*", "**", "+"])

    def call_binop(self, context, operator, left, right):
        ints = isinstance(left, int) and isinstance(right, int)
        if operator == "**":
            if ints and right > 0 and max(abs(left), 1).bit_length() * right > MAX_INT_BITS:
                raise jinja2.exceptions.SecurityError(f"{left} ** {right} would have more than "
                                                      f"{MAX_INT_BITS} bits")
        elif operator == "*" and ints:
            if left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise jinja2.exceptions.SecurityError(f"a product would have more than {MAX_INT_BITS} bits")
        elif operator == "*":
            seq, count = (left, right) if isinstance(right, int) else (right, left)
            if isinstance(count, int) and hasattr(seq, "__len__") and len(seq) * max(count, 0) > MAX_LENGTH:
                raise _too_long("a repetition")
        elif hasattr(left, "__len__") and hasattr(right, "__len__") and len(left) + len(right) > MAX_LENGTH:
            raise _too_long("a sum")
        return super().call_binop(context, operator, left, right)


# Globals that no template name clashes with in practice: every for loop's iterable passes
# through the first, every `~` (Concat) through the second (_Guards rewrites the parsed template).
_LOOP_GUARD, _CONCAT_GUARD = "__tileinfer_loop_guard", "__tileinfer_concat_guard"


class _Guards(jinja2.visitor.NodeTransformer):
    def visit_For(self, node):
        node = self.generic_visit(node)
        node.iter = jinja2.nodes.Call(jinja2.nodes.Name(_LOOP_GUARD, "load"), [node.iter], [], None, None,
                                      lineno=node.lineno)
        return node

    def visit_Concat(self, node):
        node = self.generic_visit(node)
        return jinja2.nodes.Call(jinja2.nodes.Name(_CONCAT_GUARD, "load"), node.nodes, [], None, None,
                                 lineno=node.lineno)


def _concat_guard(*parts) -> str:
    """Jinja's `~` (str of each part, joined), refusing a result past MAX_LENGTH."""
    pieces = [str(p) for p in parts]
    if sum(map(len, pieces)) > MAX_LENGTH:
        raise _too_long("a `~` concatenation")
    return "".join(pieces)


def _render_fn(template: str, bos_token: str | None, eos_token: str | None):
    env = _BudgetedEnvironment(trim_blocks=True, lstrip_blocks=True)
    steps = [0]  # loop iterations in the current render

    def loop_guard(iterable):
        for item in iterable:
            steps[0] += 1
            if steps[0] > LOOP_BUDGET:
                raise jinja2.exceptions.SecurityError(
                    f"its loops ran more than {LOOP_BUDGET} iterations in one render")
            yield item

    env.globals[_LOOP_GUARD] = loop_guard
    env.globals[_CONCAT_GUARD] = _concat_guard

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env.globals["raise_exception"] = raise_exception
    # Templates that print today's date get a fixed one: a package must not change by day.
    env.globals["strftime_now"] = lambda fmt: datetime.date(2026, 1, 1).strftime(fmt)
    try:
        # The parsed template with its loops and `~` through the guards, then compiled
        # (Environment.from_string takes a parsed template as well as source).
        compiled = env.from_string(_Guards().visit(env.parse(template)))
    except jinja2.exceptions.TemplateError as e:
        raise ChatTemplateError(f"the chat template does not parse: {e}") from None
    except (RecursionError, MemoryError) as e:  # e.g. blocks nested past Python's depth
        raise ChatTemplateError(f"the chat template does not parse: {type(e).__name__}: {e}") from None

    def render(messages, add_generation_prompt=False):
        steps[0] = 0
        try:
            return compiled.render(messages=messages, add_generation_prompt=add_generation_prompt,
                                   bos_token=bos_token or "", eos_token=eos_token or "",
                                   date_string="01 Jan 2026")
        except jinja2.exceptions.TemplateError as e:
            raise ChatTemplateError(f"the chat template fails to render: {e}") from None
        except Exception as e:  # the template's own errors: a TypeError, 1 // 0, a recursive macro
            raise ChatTemplateError(f"the chat template fails to render: {type(e).__name__}: {e}") from None

    return render


def _split(text: str, marker: str, what: str) -> tuple[str, str]:
    if text.count(marker) != 1:
        raise ChatTemplateError(f"the chat template does not place the {what} content exactly once")
    before, after = text.split(marker)
    return before, after


def render_reduced(fmt: dict, messages: list[dict], add_generation_prompt: bool) -> str:
    """The chat as the runtime renders it from the reduced form `fmt` (see derive).

    Raises:
      ChatTemplateError: a system message after the first message, where fmt has no
        system_later.
    """
    out = fmt["head"]
    if messages and messages[0]["role"] != "system":
        out += fmt["default_system"]
    for i, m in enumerate(messages):
        if m["role"] == "system" and i > 0:
            if fmt.get("system_later") is None:
                raise ChatTemplateError("this chat format has no system message after the first")
            prefix, suffix = fmt["system_later"]
        else:
            prefix, suffix = fmt["roles"][m["role"]]
        out += prefix + m["content"] + suffix
    if add_generation_prompt:
        out += fmt["generation_prompt"]
    return out


def derive(template: str, bos_token: str | None, eos_token: str | None) -> dict:
    """Reduces `template` to {"head", "default_system", "roles": {role: [prefix, suffix]},
    "system_later": [prefix, suffix] or None, "generation_prompt"} (strings) and checks it on
    multi-turn conversations (those with a system message after the first only when
    system_later is not None).

    Raises:
      ChatTemplateError: the template does not parse or render, or the reduced form does not
        reproduce it exactly; the message says which conversation differs.
    """
    render = _render_fn(template, bos_token, eos_token)
    s, u, a = "\x01SYSTEM\x01", "\x01USER\x01", "\x01ASSISTANT\x01"
    sys_only = render([{"role": "system", "content": s}])
    head_and_sys_prefix, sys_suffix = _split(sys_only, s, "system")
    with_user = render([{"role": "system", "content": s}, {"role": "user", "content": u}])
    _, rest = _split(with_user, s, "system")
    if not rest.startswith(sys_suffix):
        raise ChatTemplateError("the system message's suffix changes when a user message follows")
    user_prefix, user_suffix = _split(rest[len(sys_suffix):], u, "user")
    with_assistant = render([{"role": "system", "content": s}, {"role": "user", "content": u},
                             {"role": "assistant", "content": a}])
    _, rest = _split(with_assistant, u, "user")
    if not rest.startswith(user_suffix):
        raise ChatTemplateError("the user message's suffix changes when an assistant message follows")
    assistant_prefix, assistant_suffix = _split(rest[len(user_suffix):], a, "assistant")
    # The head: what precedes the first role prefix (a BOS string, for Llama 3). Take it from a
    # chat that starts with a user message, which has no system block unless a default one.
    user_first = render([{"role": "user", "content": u}])
    before_user, _ = _split(user_first, u, "user")
    if not before_user.endswith(user_prefix):
        raise ChatTemplateError("the user prefix differs when the chat starts with it")
    before_prefix = before_user[:-len(user_prefix)] if user_prefix else before_user
    # before_prefix = head + default_system; head_and_sys_prefix = head + system prefix. The
    # head is the BOS string when both start with it (Llama 3), else empty (SmolLM2).
    head = bos_token if (bos_token and before_prefix.startswith(bos_token)
                         and head_and_sys_prefix.startswith(bos_token)) else ""
    fmt = {
        "head": head,
        "default_system": before_prefix[len(head):],
        "roles": {"system": [head_and_sys_prefix[len(head):], sys_suffix],
                  "user": [user_prefix, user_suffix],
                  "assistant": [assistant_prefix, assistant_suffix]},
        "system_later": None,
        "generation_prompt": "",
    }
    ask = [{"role": "user", "content": u}]
    with_prompt, without = render(ask, True), render(ask, False)
    if not with_prompt.startswith(without):
        raise ChatTemplateError("add_generation_prompt changes more than the chat's end")
    fmt["generation_prompt"] = with_prompt[len(without):]
    _check(render, fmt, _conversations())
    # A system message after the first (Hugging Face renders it wherever it stands): its own
    # prefix and suffix, read off [user, system], kept only if every such conversation matches.
    try:
        later = render([{"role": "user", "content": u}, {"role": "system", "content": s}])
        if later.startswith(user_first):
            fmt["system_later"] = list(_split(later[len(user_first):], s, "later system"))
            _check(render, fmt, _later_system_conversations())
    except ChatTemplateError:
        fmt["system_later"] = None
    return fmt


def _check(render, fmt: dict, conversations: list[list[dict]]) -> None:
    """Raises ChatTemplateError at the first conversation the reduced form renders otherwise."""
    for messages in conversations:
        for gen in (False, True):
            want, got = render(messages, gen), render_reduced(fmt, messages, gen)
            if want != got:
                roles = [m["role"] for m in messages]
                raise ChatTemplateError(
                    f"the chat template cannot be reduced to per-role prefix/suffix strings: "
                    f"for roles {roles} (generation prompt {gen}) it renders {want!r}, the "
                    f"reduced form {got!r}")


def _conversations() -> list[list[dict]]:
    def m(role, content):
        return {"role": role, "content": content}
    return [
        [m("user", "Hi!")],
        [m("system", "Be brief."), m("user", "Hi!")],
        [m("user", "What is 2+2?"), m("assistant", "4"), m("user", "And 3+3?")],
        [m("system", "You answer in French."), m("user", "Hello"), m("assistant", "Bonjour"),
         m("user", "How are you?"), m("assistant", "Bien, merci."), m("user", "Bye\n")],
        [m("system", "")],
    ]


def _later_system_conversations() -> list[list[dict]]:
    def m(role, content):
        return {"role": role, "content": content}
    return [
        [m("user", "Hi!"), m("system", "Be brief."), m("user", "Hi again.")],
        [m("system", "Be brief."), m("system", "Answer in French."), m("user", "Hi!")],
        [m("user", "2+2?"), m("assistant", "4"), m("system", "Now be verbose."), m("user", "3+3?")],
        [m("user", "Bye"), m("system", "")],
    ]
