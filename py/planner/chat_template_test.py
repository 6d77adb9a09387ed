"""The reduced chat format reproduces full Jinja templates on multi-turn chats."""
import json
import sys
import time

import pytest

from planner import chat_template

SMOLLM2 = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
           "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
           "Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + "
           "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
           "{{ '<|im_start|>assistant\\n' }}{% endif %}")

# Llama-3-style: BOS string first, headers per role, a system block with fixed date lines
# even when the chat has no system message (written for this test, after Meta's format).
LLAMA3_LIKE = ("{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set sys = messages[0]"
               "['content'] %}{% set messages = messages[1:] %}{% else %}{% set sys = '' %}{% endif %}"
               "{{ '<|start_header_id|>system<|end_header_id|>\\n\\nToday Date: ' + date_string + "
               "'\\n\\n' + sys + '<|eot_id|>' }}{% for m in messages %}{{ '<|start_header_id|>' + "
               "m['role'] + '<|end_header_id|>\\n\\n' + m['content'] + '<|eot_id|>' }}{% endfor %}"
               "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
               "{% endif %}")


def test_smollm2_template():
    fmt = chat_template.derive(SMOLLM2, "<|im_start|>", "<|im_end|>")
    # SmolLM2's BOS string is also its role marker: the head takes it, the system blocks follow.
    assert (fmt["head"] + fmt["default_system"]).startswith("<|im_start|>system\nYou are a helpful")
    assert fmt["roles"]["user"] == ["<|im_start|>user\n", "<|im_end|>\n"]
    assert fmt["generation_prompt"] == "<|im_start|>assistant\n"
    text = chat_template.render_reduced(fmt, [{"role": "user", "content": "Hi"}], True)
    assert text == ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
                    "Hugging Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")


def test_llama3_like_template_has_one_bos_in_the_head():
    fmt = chat_template.derive(LLAMA3_LIKE, "<|begin_of_text|>", "<|eot_id|>")
    assert fmt["head"] == "<|begin_of_text|>"
    assert "<|begin_of_text|>" not in json.dumps({k: v for k, v in fmt.items() if k != "head"})
    chat = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"}]
    assert chat_template.render_reduced(fmt, chat, True).count("<|begin_of_text|>") == 1


def test_smollm2_system_message_after_the_first_opens_with_its_marker():
    fmt = chat_template.derive(SMOLLM2, "<|im_start|>", "<|im_end|>")
    assert fmt["system_later"] == ["<|im_start|>system\n", "<|im_end|>\n"]
    render = chat_template._render_fn(SMOLLM2, "<|im_start|>", "<|im_end|>")
    chat = [{"role": "user", "content": "a"}, {"role": "system", "content": "mid"},
            {"role": "user", "content": "c"}]
    assert chat_template.render_reduced(fmt, chat, True) == render(chat, True)
    assert "<|im_end|>\n<|im_start|>system\nmid" in render(chat, True)


def test_llama3_like_later_system_message_has_its_header_without_the_date():
    fmt = chat_template.derive(LLAMA3_LIKE, "<|begin_of_text|>", "<|eot_id|>")
    assert fmt["system_later"] == ["<|start_header_id|>system<|end_header_id|>\n\n", "<|eot_id|>"]


def test_template_that_refuses_a_later_system_message_has_none_and_the_form_refuses_it():
    strict = ("{% for m in messages %}{% if m['role'] == 'system' and not loop.first %}"
              "{{ raise_exception('System message must be first') }}{% endif %}"
              "{{ '<' + m['role'] + '>' + m['content'] + '</' + m['role'] + '>' }}{% endfor %}")
    fmt = chat_template.derive(strict, None, None)
    assert fmt["system_later"] is None
    assert chat_template.render_reduced(fmt, [{"role": "system", "content": "s"}], False) == "<system>s</system>"
    with pytest.raises(chat_template.ChatTemplateError, match="no system message after the first"):
        chat_template.render_reduced(fmt, [{"role": "user", "content": "u"},
                                           {"role": "system", "content": "s"}], False)


def test_content_dependent_template_is_refused():
    tricky = ("{% for m in messages %}{% if m['content'] | length > 3 %}LONG{% endif %}"
              "{{ m['role'] + ':' + m['content'] + '\\n' }}{% endfor %}")
    with pytest.raises(chat_template.ChatTemplateError, match="cannot be reduced"):
        chat_template.derive(tricky, None, None)


@pytest.mark.parametrize("template, needle", [
    ("{% for m in messages %}{{ m['content'] + m['content'] }}{% endfor %}",
     "does not place the system content exactly once"),
    ("{% for m in messages %}{{ m['role'] + ':' + m['content'] }}{% if loop.last %}END"
     "{% else %}|{% endif %}{% endfor %}",
     "the system message's suffix changes when a user message follows"),
    ("{% for m in messages %}{{ m['role'] + ':' + m['content'] }}{% if m['role'] == 'system' %};"
     "{% elif loop.last %}END{% else %}|{% endif %}{% endfor %}",
     "the user message's suffix changes when an assistant message follows"),
    ("{% for m in messages %}{% if loop.first %}{{ m['role'] | upper }}{% else %}{{ m['role'] }}"
     "{% endif %}:{{ m['content'] }};{% endfor %}",
     "the user prefix differs when the chat starts with it"),
    ("{% if add_generation_prompt %}GEN{% endif %}{% for m in messages %}"
     "{{ m['role'] + ':' + m['content'] + ';' }}{% endfor %}",
     "add_generation_prompt changes more than the chat's end"),
])
def test_templates_that_do_not_reduce_are_refused_at_the_first_difference(template, needle):
    with pytest.raises(chat_template.ChatTemplateError, match=needle):
        chat_template.derive(template, None, None)


def test_broken_template_is_refused():
    with pytest.raises(chat_template.ChatTemplateError, match="does not parse"):
        chat_template.derive("{% for m in messages %}", None, None)


@pytest.mark.parametrize("template, needle", [
    ("{% for m in messages %}{{ m['content'] / 2 }}{% endfor %}", "TypeError"),
    ("{{ 1 // 0 }}", "ZeroDivisionError"),
    ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "RecursionError"),
])
def test_a_template_that_raises_while_rendering_is_refused(template, needle):
    """Errors of the template's own code, not Jinja's: a ChatTemplateError (the planner then
    writes no chat format), not a traceback."""
    with pytest.raises(chat_template.ChatTemplateError, match=f"fails to render: {needle}"):
        chat_template.derive(template, None, None)


@pytest.mark.parametrize("prelude, needle", [
    # 10^10 empty iterations: hours before the budget (this one test's own 20 s would time out)
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "its loops ran more than"),
    ("{% set s = 'ab' * 300000 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}", "its loops ran more than"),
    ("{{ 2 ** 100000 }}", "\\(2\\) \\*\\* 100000 would have more than 4096 bits"),
    ("{% set ns = namespace(x=3) %}{% for i in range(64) %}{% set ns.x = ns.x * ns.x %}{% endfor %}",
     "a product would have more than 4096 bits"),
    ("{{ 'a' * 10**9 }}", "a repetition would be longer than"),
    ("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
     "a `~` concatenation would be longer than"),
    ("{% set ns = namespace(s=[1]) %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
     "a sum would be longer than"),
])
def test_a_template_whose_work_has_no_bound_is_refused_at_once(prelude, needle):
    """A render's loops and the sizes that `*`, `**`, `+` and `~` make are bounded by counts
    (not a clock: the chat format must not depend on the planning machine), so such templates
    fail to render in milliseconds where they would run for hours or fill the memory."""
    with pytest.raises(chat_template.ChatTemplateError, match=f"fails to render: {needle}"):
        chat_template.derive(prelude + SMOLLM2, "<|im_start|>", "<|im_end|>")


def test_a_template_that_counts_cannot_bound_is_stopped_by_the_child_s_clock(monkeypatch):
    """Macros that each call the next twice: 2^34 calls and no loop. derive's child process
    ends at DERIVE_SECONDS (2 s here) with a clean error."""
    monkeypatch.setattr(chat_template, "DERIVE_SECONDS", 2)
    fan_out = "".join(f"{{% macro m{i}() %}}{{{{ m{i + 1}() }}}}{{{{ m{i + 1}() }}}}{{% endmacro %}}"
                      for i in range(34)) + "{% macro m34() %}{% endmacro %}{{ m0() }}"
    start = time.monotonic()
    with pytest.raises(chat_template.ChatTemplateError, match="did not finish rendering within 2 s"):
        chat_template.derive(fan_out + SMOLLM2, "<|im_start|>", "<|im_end|>")
    assert time.monotonic() - start < 15


def test_a_template_that_needs_more_memory_than_the_child_s_limit_is_refused():
    """A 3 GB string from one filter (its width known only when rendering) in a child limited
    to DERIVE_MEMORY_BYTES (2 GiB)."""
    with pytest.raises(chat_template.ChatTemplateError, match="MemoryError|more than 2 GiB"):
        chat_template.derive("{{ ''|center(3000000000 + messages|length) }}" + SMOLLM2, "<|im_start|>",
                             "<|im_end|>")


def test_the_bounds_leave_ordinary_template_code_alone():
    """Loops of the budget's size, `~`, `+`, `*` and `**` within the sizes: the same form as
    without them (the prelude prints nothing)."""
    prelude = ("{% set ns = namespace(n=0, s='') %}{% for i in range(100) %}{% for j in range(100) %}"
               "{% set ns.n = ns.n + 2 ** 10 * 3 %}{% endfor %}{% set ns.s = ns.s ~ 'ab' * 10 + 'c' %}"
               "{% endfor %}{% if ns.n != 30720000 or ns.s|length != 2100 %}{{ raise_exception('bad') }}{% endif %}")
    assert (chat_template.derive(prelude + SMOLLM2, "<|im_start|>", "<|im_end|>")
            == chat_template.derive(SMOLLM2, "<|im_start|>", "<|im_end|>"))


def test_the_loop_and_concat_guards_render_what_jinja_renders():
    """The guarded loops keep loop.length, last, revindex, cycle, previtem, nextitem, changed,
    filtered loops, for-else and unpacking, and `~` its str() joins, against plain Jinja."""
    import jinja2.sandbox
    template = ("{% for m in messages %}{{ loop.index0 }}/{{ loop.length }}/{{ loop.revindex }}/{{ loop.last }}/"
                "{{ loop.cycle('a','b') }}/{{ loop.previtem.role if loop.previtem else '-' }}/"
                "{{ loop.nextitem.role if loop.nextitem else '-' }}/{{ loop.changed(m.role) }}"
                "{% for c in m.content if c != 'x' %}{{ c }}{% else %}E{% endfor %};{% endfor %}"
                "{% for z in [] %}no{% else %}else{% endfor %}{% for k, v in {'a': 1}.items() %}{{ k ~ v ~ none }}"
                "{% endfor %}")
    messages = [{"role": "user", "content": "hix"}, {"role": "assistant", "content": "x"},
                {"role": "user", "content": "yo"}]
    plain = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    want = plain.from_string(template).render(messages=messages)
    assert want.startswith("0/3/3/False/a/-/assistant/Truehi;1/3/2")
    assert chat_template._render_fn(template, None, None)(messages) == want
    # `~` under autoescape joins as Jinja does (text marked safe stays unescaped), and small
    # powers and products pass whatever their operands' sizes.
    escaped = ("{% autoescape true %}{% for m in messages %}{{ '<|im_start|>'|safe ~ m.role ~ '<' ~ m.content }}"
               "{% endfor %}{% endautoescape %}{{ 1 ** 5000 }} {{ (-1) ** 5001 }} {{ (2 ** 3000) % 7 }} "
               "{{ ((2 ** 2048) * (2 ** 2047)) % 7 }} {{ 0 * 2 ** 4000 }}")
    want = plain.from_string(escaped).render(messages=messages)
    assert want.startswith("<|im_start|>user&lt;hix<|im_start|>assistant")
    assert chat_template._render_fn(escaped, None, None)(messages) == want


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
