"""The loop with canned completions: what the model is sent, what is appended, why it stops."""

from __future__ import annotations

import pytest

from harness.dialects import DefaultDialect
from harness.events import StopReason
from harness.limits import Limits
from harness.loop import UNLIMITED, Setup, run
from harness.model import EndingModel, ScriptedModel
from harness.tools import Registry, calculator, from_function
from harness.transcript import Author, Transcript

PROMPT = "Answer with the calculator.\nQuestion: 6 * 7?\n"


def agent(**limits) -> Setup:
    buffer = Transcript()
    buffer.append(Author.DEVELOPER, PROMPT)
    return Setup(buffer, DefaultDialect(), Registry([calculator()]), Limits(**limits))


def test_the_model_sees_the_whole_buffer_fresh_every_call_and_it_only_grows():
    model = ScriptedModel(["Action: calculator(6 * 7)\n", "Final Answer: 42\n"])
    result = run(agent(), model)
    # The model keeps only how much it was sent: every prompt is a prefix of the buffer.
    first, second = (result.transcript.text[:chars] for chars in model.calls)
    assert first == PROMPT
    assert second == PROMPT + "Action: calculator(6 * 7)\nObservation: 42\n"
    assert result.transcript.text.startswith(second)
    assert (result.stop_reason, result.final_answer, result.steps) == (StopReason.FINAL_ANSWER, "42", 2)


def test_the_stop_sequence_keeps_a_made_up_observation_out_of_the_buffer():
    model = ScriptedModel(["Action: calculator(6 * 7)\nObservation: 41\nFinal Answer: 41\n", "Final Answer: 42\n"])
    result = run(agent(), model)
    assert "41" not in result.transcript.text
    assert (result.calls[0].cut, result.calls[0].cut_by) == ("Observation:", "stop")  # read no further
    assert result.final_answer == "42"


def test_peek_reads_past_the_stop_only_to_record_what_it_prevented():
    script = ["Action: calculator(6 * 7)\nObservation: 41\nFinal Answer: 41\n", "Final Answer: 42\n"]
    for peek, cut in ((4, "Observation: 41\n"), (UNLIMITED, "Observation: 41\nFinal Answer: 41\n")):
        setup = agent()
        setup.peek = peek
        result = run(setup, ScriptedModel(script))
        assert result.calls[0].cut == cut
        assert "41" not in result.transcript.text
    assert result.final_answer == "42"


def test_a_call_that_fails_while_it_peeks_past_the_stop_stands_as_it_was_cut():
    from harness.model import ModelError

    class TimesOutWhilePeeking:  # a server whose stream passes --max-seconds after the stop, dripping
        def __init__(self) -> None:
            self.then = ScriptedModel(["Final Answer: 42\n"])
            self.calls = 0

        def stream(self, prompt, stop):
            self.calls += 1
            if self.calls > 1:
                yield from self.then.stream(prompt, stop)
                return
            yield "Action: calculator(6 * 7)\nObservation:"
            yield " 4"
            raise ModelError("the call passed its time limit of 3 s")

    for peek, reason in ((200, "final_answer"), (0, "final_answer")):
        setup = agent()
        setup.peek = peek
        result = run(setup, TimesOutWhilePeeking())
        assert (result.stop_reason.value, result.final_answer) == (reason, "42")
        assert "Observation: 42" in result.transcript.text and result.calls[0].cut.startswith("Observation:")


def test_without_the_stop_sequence_the_made_up_observation_is_the_models():
    a = agent()
    a.use_stop = False
    result = run(a, ScriptedModel(["Action: calculator(6 * 7)\nObservation: 41\nFinal Answer: 41\n"]))
    assert result.final_answer == "41"
    assert result.transcript.spans[-1].author is Author.MODEL
    assert "Observation: 41" in result.transcript.spans[-1].text


def test_each_limit_ends_the_run_with_its_own_reason():
    assert run(agent(max_steps=2), ScriptedModel(["Action: calculator(1)\n"] * 5)).stop_reason == StopReason.MAX_STEPS
    unknown = run(agent(), ScriptedModel(["Action: nope()\n", "Action: nope()\n"]))
    assert unknown.stop_reason == StopReason.UNKNOWN_TOOL_LIMIT
    assert "Valid tools: calculator" in unknown.transcript.text
    malformed = run(agent(), ScriptedModel(["hm\n"] * 3))
    assert (malformed.stop_reason, malformed.steps) == (StopReason.FORMAT_ERROR_LIMIT, 3)
    exhausted = run(agent(), ScriptedModel(["Action: calculator(1)\n"]))
    assert (exhausted.stop_reason, exhausted.steps) == (StopReason.MODEL_EXHAUSTED, 1)


def test_a_known_tool_resets_the_unknown_tool_count():
    script = ["Action: nope()\n", "Action: calculator(1)\n", "Action: nope()\n", "Final Answer: 1\n"]
    assert run(agent(), ScriptedModel(script)).stop_reason == StopReason.FINAL_ANSWER


def test_a_model_error_and_an_interrupt_end_the_run_without_a_crash():
    failed = run(agent(), EndingModel(ScriptedModel(["Action: calculator(1)\n"]), 2, error="HTTP 503"))
    assert (failed.stop_reason, failed.detail, failed.steps) == (StopReason.MODEL_ERROR, "HTTP 503", 1)
    canceled = run(agent(), EndingModel(ScriptedModel(["Thought: six times seven\n"], chunk_size=3), 1, at=10))
    assert canceled.stop_reason == StopReason.CANCELED
    assert canceled.transcript.spans[-1] == canceled.transcript.spans[-1].__class__(Author.MODEL, "Thought: s")


def test_zero_steps_calls_no_model():
    model = ScriptedModel(["Final Answer: 1\n"])
    result = run(agent(max_steps=0), model)
    assert (result.stop_reason, result.steps, model.calls) == (StopReason.MAX_STEPS, 0, [])


def test_an_agent_from_python_objects_names_a_template_variable_nobody_supplies():
    from harness import Agent
    from harness.errors import TemplateError

    try:
        Agent(prompt="Hello $name\n$question\n").run("q", ScriptedModel([]))
    except TemplateError as e:
        assert str(e) == "Agent.prompt: uses $name, which is not supplied (supplied: $question, $tools)"
    else:
        raise AssertionError("a missing template variable must be an error")


def test_an_agent_whose_prompt_never_uses_the_question_is_refused():
    from harness import Agent
    from harness.errors import TemplateError

    with pytest.raises(TemplateError, match=r"^Agent.prompt: never uses \$question"):
        Agent(prompt="Tools: $tools\n").run("q", ScriptedModel([]))


def test_a_repeat_is_the_same_values_of_the_same_types():
    """echo(1) and echo("1") answer alike, yet are two calls; echo(1) again is a repeat."""

    def echo(text):
        """Say it back."""
        return str(text)

    buffer = Transcript()
    buffer.append(Author.DEVELOPER, PROMPT)
    setup = Setup(buffer, DefaultDialect(), Registry([from_function(echo)]), Limits(repeat_limit=1))
    script = [f"Action: echo({args})\n" for args in ("1", '"1"', "1.0", "true", '"x"', "1")]
    record = run(setup, ScriptedModel([*script, "Final Answer: done\n"]))
    assert (record.stop_reason, record.steps) == (StopReason.REPEATED_CALL_LIMIT, 6)
    assert [c.notices for c in record.calls[:5]] == [()] * 5
