"""The chat endpoint (`--model chat:NAME`): the buffer split into messages by author.

Against the loopback server (tests/loopback.py): the messages each call sends, worked by
hand; stops enforced by the client when the server ignores them; the record of the
messages count per call; a saved chat run replayed offline, byte for byte. Against
llama.cpp's own server: tests/test_real_model.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.backends.messages import messages
from harness.cli import app
from harness.errors import HarnessError
from harness.files import read_input
from harness.record import replay
from harness.saved import load_record
from harness.transcript import Author, Span, Transcript
from tests.loopback import FakeServer, Reply, delta, sse

runner = CliRunner()
KEY = "sk-chat-0123456789abcdef"


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1", "HARNESS_API_KEY": KEY})


@pytest.fixture
def fake():
    server = FakeServer()
    yield server
    server.close()


def chat_reply(completion: str) -> Reply:
    pieces = [delta(line) for line in completion.splitlines(keepends=True)]
    return Reply(chunks=sse({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}, *pieces, delta("", "stop"), "[DONE]"))


def test_the_rule_worked_by_hand():
    spans = [
        Span(Author.DEVELOPER, "Answer with tools.\nQuestion: 6*7?\n"),
        Span(Author.CODE, "Thought 1:"),
        Span(Author.MODEL, " multiply.\nAction: calculator(6*7)\n"),
        Span(Author.CODE, "Observation: 42\n"),
        Span(Author.DEVELOPER, "Go on.\n"),  # a frame after the first model turn: user, with code's text
        Span(Author.MODEL, "Final Answer: 42\n"),
    ]
    assert messages(spans) == [
        {"role": "user", "content": "Answer with tools.\nQuestion: 6*7?\nThought 1:"},
        {"role": "assistant", "content": " multiply.\nAction: calculator(6*7)\n"},
        {"role": "user", "content": "Observation: 42\nGo on.\n"},
        {"role": "assistant", "content": "Final Answer: 42\n"},
    ]
    assert "".join(m["content"] for m in messages(spans)) == Transcript(spans).text  # every byte, once, in order


def test_a_template_that_writes_control_tokens_is_refused_for_chat():
    with pytest.raises(HarnessError, match=r"control token '<\|im_start\|>'.*a chat endpoint frames the turns itself"):
        messages([Span(Author.DEVELOPER, "<|im_start|>user\nhi<|im_end|>\n")])


def test_a_chat_run_sends_messages_by_the_rule_cuts_at_the_stop_and_replays_offline(fake, tmp_path):
    first = "Thought: 6 times 7.\nAction: calculator(6 * 7)\nObservation: 41\nFinal Answer: 41\n"  # ignores the stop
    fake.serve(chat_reply(first), chat_reply("Final Answer: 42\n"))
    saved = tmp_path / "chat.txt"
    result = invoke("run", "calculator", "--model", "chat:m", "--base-url", fake.url, "--save", str(saved), "-f", "tagged")
    assert result.exit_code == 0, result.output
    assert fake.paths == ["/v1/chat/completions"] * 2
    record = load_record(read_input(saved), str(saved))
    assert (record.stop_reason, record.final_answer) == ("final_answer", "42")
    assert "Observation: 41" not in record.transcript.text  # the client's scanner cut it
    one, two = (body["messages"] for _, body in fake.requests)
    assert [m["role"] for m in one] == ["user"] and [m["role"] for m in two] == ["user", "assistant", "user"]
    assert two[1]["content"] == "Thought: 6 times 7.\nAction: calculator(6 * 7)\n"
    assert two[2]["content"] == "Observation: 42\n"
    assert "".join(m["content"] for m in two) == record.transcript.text[: len("".join(m["content"] for m in two))]
    assert fake.requests[0][1]["stop"] == ["Observation:"] and "prompt" not in fake.requests[0][1]
    assert [c.messages for c in record.calls] == [1, 3]
    assert record.scenario.endpoint == "chat"
    assert KEY not in saved.read_text() + result.output
    fake.close()  # offline now
    assert replay(saved.read_text(encoding="utf-8"), str(saved)).matches
    assert invoke("replay", str(saved), "--check").exit_code == 0


def test_a_chat_run_with_a_chatml_template_is_one_line_exit_2(fake, tmp_path):
    result = runner.invoke(app, ["run", "live-distance", "--model", "chat:m", "--base-url", fake.url, "--save", str(tmp_path / "x.txt")])
    assert result.exit_code == 2 and result.stderr.startswith("error: --model chat:NAME: the prompt template writes the control token")
    assert fake.requests == [] and not (tmp_path / "x.txt").exists()
    assert result.stdout == ""  # refused before the view printed the prompt it refuses (the rich format did)


def saved_chat_run(tmp_path, thought: str = "Thought: add.\n"):
    """A scripted scenario run through the chat rule and saved: its file."""
    scenario = tmp_path / "s.toml"
    completions = json.dumps([thought + "Action: calculator(1 + 1)\n", "Final Answer: 2\n"])
    scenario.write_text(f'question = "1+1?"\nendpoint = "chat"\ncompletions = {completions}\n[tools.calculator]\n', encoding="utf-8")
    saved = tmp_path / "s.txt"
    assert invoke("run", str(scenario), "--save", str(saved)).exit_code == 0
    return saved


def test_a_scripted_scenario_can_go_through_the_chat_rule(tmp_path):
    saved = saved_chat_run(tmp_path)
    assert [c.messages for c in load_record(read_input(saved), str(saved)).calls] == [1, 3]
    assert invoke("replay", str(saved), "--check").exit_code == 0


def test_a_strict_server_gets_no_llama_cpp_knobs_and_at_most_four_stops():
    from harness.backends.server import ChatModel
    from harness.backends.server import ServerModel

    stops = [f"S{i}:" for i in range(6)]
    strict = ChatModel("gpt-4o-mini", "https://api.openai.com/v1").request("Q", stops)  # detected by its host
    assert not {"repeat_penalty", "top_k", "min_p", "max_tokens"} & set(strict) and strict["max_completion_tokens"] == 512
    assert strict["stop"] == stops[:4]
    chosen = ServerModel("m", "http://127.0.0.1:8080/v1", strict=True).request("Q", stops)
    assert "repeat_penalty" not in chosen and chosen["max_tokens"] == 512 and len(chosen["stop"]) == 4
    llama = ChatModel("m", "http://127.0.0.1:8080/v1").request("Q", stops)
    assert llama["repeat_penalty"] == 1.0 and llama["stop"] == stops and llama["messages"] == [{"role": "user", "content": "Q"}]


def test_strict_is_an_option_of_the_command(fake, tmp_path):
    fake.serve(chat_reply("Final Answer: 1\n"))
    result = invoke("run", "calculator", "--model", "chat:m", "--base-url", fake.url, "--strict")
    assert result.exit_code == 0, result.output
    assert "repeat_penalty" not in fake.requests[0][1]
    refused = invoke("run", "calculator", "--model", "local", "--strict")
    assert refused.exit_code == 2 and refused.stderr == "error: --strict: goes with a server: openai:NAME or chat:NAME\n"
    refused = invoke("run", "calculator", "--model", "local", "--wait-for-server", "5")
    assert refused.exit_code == 2 and refused.stderr == "error: --wait-for-server: goes with a server: openai:NAME or chat:NAME\n"
    refused = invoke("run", "calculator", "--max-seconds", "5")
    assert refused.exit_code == 2 and refused.stderr == "error: --max-seconds: goes with a live --model\n"


def test_show_messages_prints_what_each_call_of_a_chat_run_sent(tmp_path):
    saved = saved_chat_run(tmp_path)
    shown = invoke("show", str(saved), "--messages")
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0] == "call 1 sent 1 message:" and lines[1].startswith("  user      | Answer the question below.")
    call_2 = lines.index("call 2 sent 3 messages:")
    assert lines[call_2 + 1 :][-5:] == [
        "  assistant | Thought: add.",
        "            | Action: calculator(1 + 1)",
        "            | ",
        "  user      | Observation: 2",
        "            | ",
    ]
    plain = tmp_path / "plain.txt"
    assert invoke("run", "calculator", "--save", str(plain)).exit_code == 0
    refused = invoke("show", str(plain), "--messages")
    assert refused.exit_code == 2 and "did not go through a chat endpoint" in refused.stderr
    proxied = next((Path(__file__).parent / "examples" / "proxy" / "cassettes").glob("*/run-001.txt"))  # a chat agent's, through the proxy
    refused = invoke("show", str(proxied), "--messages")
    assert refused.exit_code == 2 and "a proxy's cassette holds its messages in the buffer: show it without --messages" in refused.stderr
    assert "[user]" in invoke("show", str(proxied)).stdout


def test_every_buffer_splits_into_alternating_messages_that_join_back_into_it():
    from hypothesis import given
    from hypothesis import strategies as st

    authors = st.sampled_from([Author.DEVELOPER, Author.MODEL, Author.CODE])
    spans = st.lists(st.tuples(authors, st.text(alphabet="ab\n ", max_size=5)), max_size=12)

    @given(spans)
    def check(pieces: list[tuple[Author, str]]) -> None:
        buffer = Transcript()
        for author, text in pieces:
            buffer.append(author, text)
        sent = messages(buffer.spans)
        assert "".join(m["content"] for m in sent) == buffer.text
        assert all(a["role"] != b["role"] for a, b in zip(sent, sent[1:]))
        assert len([m for m in sent if m["role"] == "assistant"]) == len(buffer.texts_by(Author.MODEL))

    check()


def test_each_call_s_messages_are_the_rule_applied_to_the_buffer_before_it_in_one_pass():
    """sent_counts (one pass) gives what the rule gives for each call's prefix of the buffer:
    each call's messages are a prefix of the run's (what the stepper and the page show)."""
    from hypothesis import given
    from hypothesis import strategies as st

    from harness.backends.messages import sent_counts

    authors = st.sampled_from([Author.DEVELOPER, Author.MODEL, Author.CODE])
    pieces = st.lists(st.tuples(authors, st.text(alphabet="ab\n ", max_size=5)), max_size=12)

    @given(pieces)
    def check(pieces: list[tuple[Author, str]]) -> None:
        buffer = Transcript()
        for author, text in pieces:
            buffer.append(author, text)
        spans = buffer.spans
        run, counts = sent_counts(spans)
        assert run == messages(spans)
        assert [run[:n] for n in counts] == [messages(spans[:i]) for i, s in enumerate(spans) if s.author is Author.MODEL]

    check()


def test_a_chat_run_s_notes_say_what_each_call_was_sent_and_list_the_messages_once(tmp_path):
    """Course notes of a chat run: each model step names how many messages its call was
    sent; the messages follow once, each line led by its role; a plain run has neither."""
    saved = saved_chat_run(tmp_path)
    assert invoke("export", str(saved), "--markdown", str(tmp_path / "chat.md")).exit_code == 0
    notes = (tmp_path / "chat.md").read_text(encoding="utf-8")
    said = [line for line in notes.splitlines() if line.startswith("- **messages:**")]
    assert said == [f"- **messages:** the call was sent the first {n} of the run's messages (below), by the chat rule" for n in (1, 3)]
    listed = notes.split("## The run's messages", 1)[1]
    assert notes.count("## The run's messages") == 1
    assert "\nuser      | Question: 1+1?\n\nassistant | Thought: add.\nassistant | Action: calculator(1 + 1)\n\nuser      | Observation: 2\n" in listed
    plain = tmp_path / "plain.md"
    assert invoke("export", "nimbus", "--markdown", str(plain)).exit_code == 0
    assert "messages" not in plain.read_text(encoding="utf-8")
