"""Traffic as runs: grouping calls, authors by position, a rewrite shown and undone, chat as text."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.transcript import Author, Span, dumps, loads
from harness.traffic import REWRITTEN, Call, chat_text, group, prompts, transcript

P = "Answer with tools.\nQuestion: 2+3?\nThought:"
C1 = " add them.\nAction: add\nAction Input: 2, 3"
OBS = "\nObservation: 5\nThought:"
C2 = " I know it.\nFinal Answer: 5"


def test_a_call_that_extends_the_last_prompt_and_completion_continues_its_run():
    runs = group([Call(P, C1), Call(P + C1 + OBS, C2)])
    assert len(runs) == 1
    buffer, rewritten = transcript(runs[0])
    assert buffer.spans == [Span(Author.DEVELOPER, P), Span(Author.MODEL, C1), Span(Author.CODE, OBS), Span(Author.MODEL, C2)]
    assert rewritten == [False, False]


def test_interleaved_concurrent_runs_stay_apart():
    q = "Answer with tools.\nQuestion: 7*6?\nThought:"
    calls = [Call(P, C1), Call(q, " multiply."), Call(q + " multiply." + OBS, " 42"), Call(P + C1 + OBS, C2)]
    runs = group(calls)
    assert [[c.completion for c in run] for run in runs] == [[C1, C2], [" multiply.", " 42"]]


def test_a_prompt_that_is_not_an_extension_starts_a_new_run():
    runs = group([Call(P, C1), Call("Something else entirely", "ok")])
    assert len(runs) == 2


def test_a_rewritten_completion_is_shown_and_each_prompt_is_given_back_byte_for_byte():
    stripped = P + C1.strip() + OBS  # the framework stripped the model's leading space
    run = [Call(P, C1), Call(stripped, C2), Call(stripped + C2 + "\nObservation: x\n", "done")]
    (grouped,) = group(run)
    buffer, rewritten = transcript(grouped)
    assert rewritten == [True, False, False]
    assert buffer.spans[1] == Span(Author.MODEL, C1)  # what the model wrote
    assert buffer.spans[2] == Span(Author.CODE, REWRITTEN + C1.strip() + OBS)  # the mark, then what was sent
    assert "did not send back the model's words" in dumps(buffer)
    saved, _ = loads(dumps(buffer, {"rewritten": rewritten}))
    assert prompts(saved, rewritten, "f") == [c.prompt for c in run]


def test_an_empty_addition_still_parts_two_model_turns():
    (run,) = group([Call(P, C1), Call(P + C1 + "\n", "x"), Call(P + C1 + "\n" + "x", "y")])
    buffer, rewritten = transcript(run)
    assert [s.author for s in buffer.spans][-3:] == [Author.MODEL, Author.CODE, Author.MODEL]
    assert prompts(loads(dumps(buffer))[0], rewritten, "f") == [c.prompt for c in run]


def test_a_retry_of_a_failed_call_takes_its_place_and_a_failed_call_ends_its_run():
    runs = group([Call(P, "", error="HTTP 500"), Call(P, C1), Call(P + C1 + OBS, "", error="HTTP 500")])
    assert len(runs) == 1 and [c.error for c in runs[0]] == ["", "HTTP 500"]
    buffer, rewritten = transcript(runs[0])
    assert [s.author for s in buffer.spans] == [Author.DEVELOPER, Author.MODEL, Author.CODE]
    assert prompts(buffer, rewritten, "f") == [P, P + C1 + OBS]


def test_chat_messages_become_text_with_tool_calls_and_results():
    calls = [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2}'}}]
    text = chat_text(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "2+3?"}]},
            {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "tool", "tool_call_id": "c1", "content": "5"},
        ],
        tools=[{"type": "function", "function": {"name": "add"}}],
    )
    assert text == (
        '[tools]\n{"function": {"name": "add"}, "type": "function"}\n'
        "[system]\nBe brief.\n[user]\n2+3?\n[assistant]\n[call c1] add({\"a\": 2})\n[tool c1]\n5\n[assistant]\n"
    )


@pytest.mark.parametrize(
    "messages, where",
    [([], "messages"), ([{"content": "x"}], "messages[0]"), ([{"role": "user", "content": 5}], "messages[0].content"),
     ([{"role": "assistant", "tool_calls": [{"function": 3}]}], "messages[0].tool_calls[0]")],
)  # fmt: skip
def test_malformed_messages_name_the_field(messages, where):
    with pytest.raises(HarnessError) as e:
        chat_text(messages)
    assert e.value.where == where
