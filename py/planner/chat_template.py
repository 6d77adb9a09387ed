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
import json
import os
import resource
import subprocess
import sys

import jinja2
import jinja2.nodes
import jinja2.runtime
import jinja2.sandbox
import jinja2.visitor

ROLES = ("system", "user", "assistant")

# A template's work is bounded twice. First by counts, the same on every machine: a template
# that loops more than LOOP_BUDGET times in one render (its for loops; a recursive loop's
# loop(...) calls are not counted), or builds a string, list or integer past the sizes below
# with `*`, `**`, `+` or `~`, fails to render (no chat format) at once, instead of running for
# hours (nested range(100000) loops: 10^10 steps) or doubling a string until the memory is
# full. Real templates loop over the few messages rendered here. Then by a clock and a memory
# limit, for all the rest that counts cannot reach (a filter or string method given a huge
# width or count, such as center(10**9) or lipsum(n=10**6); macros that call themselves twice
# over; recursive loops): derive() renders in a child process, which must finish within
# DERIVE_SECONDS and DERIVE_MEMORY_BYTES. A real template derives in well under a second, so
# only a template that is pathological anyway can come out differently on another machine.
LOOP_BUDGET = 100_000  # for-loop iterations in one render, all loops together
MAX_LENGTH = 1_000_000  # items of a string or list made by `*`, `+` or `~`
MAX_INT_BITS = 4096  # bits of an integer made by `*` or `**`
DERIVE_SECONDS = 60
DERIVE_MEMORY_BYTES = 2 << 30  # the child's address space (RLIMIT_AS)


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
            # |a| ** n has more than (bits(a) - 1) * n bits: refused only when that is too many
            # (0, 1 and -1 to any power are small).
            if ints and right > 0 and abs(left) > 1 and (abs(left).bit_length() - 1) * right >= MAX_INT_BITS:
                raise jinja2.exceptions.SecurityError(f"({left}) ** {right} would have more than "
                                                      f"{MAX_INT_BITS} bits")
        elif operator == "*" and ints:
            # a * b has at least bits(a) + bits(b) - 1 bits.
            if left and right and left.bit_length() + right.bit_length() - 1 > MAX_INT_BITS:
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


@jinja2.pass_eval_context
def _concat_guard(eval_ctx, *parts):
    """Jinja's `~` (its markup_join under autoescape, else str of each part joined), refusing
    a result past MAX_LENGTH."""
    out = jinja2.runtime.markup_join(parts) if eval_ctx.autoescape else jinja2.runtime.str_join(parts)
    if len(out) > MAX_LENGTH:
        raise _too_long("a `~` concatenation")
    return out


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

    The work runs in a child Python process (derive_here there) that must finish within
    DERIVE_SECONDS and DERIVE_MEMORY_BYTES (the bounds at the top of this module); Ctrl-C or
    another exception here ends the child too.

    Raises:
      ChatTemplateError: the template does not parse or render, the reduced form does not
        reproduce it exactly (the message says which conversation differs), or the child ran
        out of time or memory or failed.
    """
    request = json.dumps({"template": template, "bos_token": bos_token, "eos_token": eos_token})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        child = subprocess.run([sys.executable, "-c", "from planner import chat_template; chat_template._child_main()"],
                               input=request, capture_output=True, text=True, env=env, timeout=DERIVE_SECONDS)
    except subprocess.TimeoutExpired:
        raise ChatTemplateError(f"the chat template did not finish rendering within {DERIVE_SECONDS} s "
                                f"(a real template takes well under a second)") from None
    try:
        reply = json.loads(child.stdout)
    except ValueError:
        tail = child.stderr.strip().splitlines()[-1:] or ["no output"]
        raise ChatTemplateError(f"the chat template's render process failed (exit status "
                                f"{child.returncode}): {tail[0]}") from None
    if "error" in reply:
        raise ChatTemplateError(reply["error"])
    return reply["format"]


def _child_main() -> None:
    """derive's child: a JSON request on stdin, {"format": ...} or {"error": message} on stdout,
    within DERIVE_MEMORY_BYTES of address space."""
    resource.setrlimit(resource.RLIMIT_AS, (DERIVE_MEMORY_BYTES, DERIVE_MEMORY_BYTES))
    request = json.load(sys.stdin)
    try:
        reply = {"format": derive_here(request["template"], request["bos_token"], request["eos_token"])}
    except ChatTemplateError as e:
        reply = {"error": str(e)}
    except MemoryError:
        reply = {"error": f"the chat template needs more than {DERIVE_MEMORY_BYTES >> 30} GiB to render"}
    json.dump(reply, sys.stdout)


def derive_here(template: str, bos_token: str | None, eos_token: str | None) -> dict:
    """derive's work, in this process, bounded only by the counts at the top of this module."""
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
