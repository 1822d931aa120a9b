"""Turn frames: a template's own text around code's turn, tagged `developer` (issue 15, item 7)."""

from __future__ import annotations

import pytest

from harness import Agent, HarnessError, ScriptedModel
from harness.prompts import by_name
from harness.tools import calculator

FRAMED = '''+++
before_code = "[/model]\\n[code]\\n"
after_code = "[/code]\\n[model]\\n"
cue = "Thought:"
+++
Tools: $tools
Question: $question
[model]
'''


def authored(record) -> list[tuple[str, str]]:
    return [(s.author.value, s.text) for s in record.transcript.spans]


def test_code_text_is_framed_by_the_developer_and_the_model_goes_on_after_the_cue():
    agent = Agent(FRAMED, tools=[calculator()])
    record = agent.run("q", ScriptedModel(["Action: calculator(1 + 1)\n", " I know it.\nFinal Answer: 2\n"]))
    assert authored(record)[1:] == [
        ("model", "Action: calculator(1 + 1)\n"),
        ("developer", "[/model]\n[code]\n"),
        ("code", "Observation: 2\n"),
        ("developer", "[/code]\n[model]\nThought:"),
        ("model", " I know it.\nFinal Answer: 2\n"),
    ]
    assert not record.transcript.text.startswith("+++")  # the frames are not part of the prompt


def test_a_notice_is_framed_too_and_nothing_follows_the_last_turn():
    from harness import Limits

    agent = Agent(FRAMED, tools=[calculator()], limits=Limits(max_steps=1))
    record = agent.run("q", ScriptedModel(["no action\n"]))
    assert record.stop_reason == "max_steps"  # no next call, so no frame that opens one
    assert [a for a, _ in authored(record)] == ["developer", "model", "developer", "code"]
    assert authored(record)[3][1].startswith("Notice: Your reply has no Action line")


@pytest.mark.parametrize(
    ("template", "user", "assistant"),
    [
        ("chatml-turns", "<|im_end|>\n<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n"),
        ("llama3", "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n",
         "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"),
    ],
)
def test_the_shipped_chat_templates_frame_observations_as_a_user_turn(template, user, assistant):
    agent = Agent(by_name(template).read_text(encoding="utf-8"), tools=[calculator()])
    record = agent.run("q", ScriptedModel(["Action: calculator(2)\n", "Final Answer: 2\n"]))
    opens = assistant.split("<|im_end|>\n")[-1].split("<|eot_id|>")[-1]  # the assistant turn's opening
    assert record.transcript.spans[0].text.endswith(opens)  # the prompt leaves the model's turn open
    assert authored(record)[2:5] == [("developer", user), ("code", "Observation: 2\n"), ("developer", assistant)]


def test_a_framed_run_replays_byte_for_byte():
    from harness import find_scenario, load_scenario, replay, run_scenario

    record = run_scenario(load_scenario(find_scenario("live-distance")))
    assert ("developer", "Thought:") in authored(record)  # chatml's cue, after code's observation
    assert replay(record.saved, "live-distance.txt").matches


@pytest.mark.parametrize(
    ("head", "says"),
    [
        ('+++\nbefore_code = "x"\n', "no line '+++' ends them"),
        ("+++\nbefore_code = \n+++\n", "the frames are not TOML"),
        ('+++\nbefore = "x"\n+++\n', "unknown key 'before'"),
        ("+++\ncue = 3\n+++\n", "cue must be a string"),
        (f'+++\ncue = "{"x" * 2000}"\n+++\n', "at most 1,000 characters"),
        ('+++\r\nbefore_code = "x"\r\n+++\r\n', "CRLF"),  # else the TOML would be sent as the prompt
        ('\ufeff+++\nbefore_code = "x"\n+++\n', "byte-order mark"),
    ],
)
def test_bad_frames_are_one_error_naming_the_template(head, says):
    with pytest.raises(HarnessError) as caught:
        Agent(head + "$question $tools").run("q", ScriptedModel([]))
    assert str(caught.value).startswith("Agent.prompt: ") and says in str(caught.value)
