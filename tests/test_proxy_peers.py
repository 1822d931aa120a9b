"""Real agents through the proxy, against the real llama.cpp server `.ci/run` starts:
LangChain's classic ReAct agent (langchain_openai.OpenAI, the completions endpoint, streamed)
and the OpenAI SDK's chat completions with tools. Each records; its transcript holds what
the framework really sent, byte for byte, with the right authors and any rewrite of the
model's words marked; with no upstream at all the same agent code passes in replay; a
changed prompt fails with the diff. The peers are test-only dependencies (the test extra).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from harness.cassette import load
from harness.cli import app
from harness.proxy import Proxy, serve
from harness.saved import load_record
from harness.traffic import REWRITTEN
from harness.transcript import Author
from tests.test_real_model import need

KEY = "sk-peer-test-key-0123456789"


@pytest.fixture(scope="module")
def server() -> tuple[str, str]:
    """The real server's base URL and the model it serves."""
    url = os.environ.get("HARNESS_TEST_SERVER")
    if not url:
        need("HARNESS_TEST_SERVER is not set: no llama.cpp server to record from")
    return url, httpx.get(f"{url}/models", timeout=10).json()["data"][0]["id"]


def recorded(folder: Path, upstream: str, agent) -> tuple[object, Path, str, object]:
    """The agent recorded once through a proxy: its answer, the one saved file, its text and its record."""
    answer = through(folder, "once", upstream, agent)
    (path,) = sorted(folder.glob("run-*.txt"))
    text = path.read_text()
    return answer, path, text, load_record(text, str(path))  # an ordinary transcript: show, step and export read it


def through(folder: Path, mode: str, upstream: str | None, agent) -> object:
    """The agent run once through a proxy in `mode`; the proxy saved after."""
    proxy = Proxy(folder, mode, upstream)
    http = serve(proxy)
    try:
        return agent(proxy.url)
    finally:
        http.shutdown()
        http.server_close()
        proxy.close()


# --- LangChain's classic ReAct agent -------------------------------------------------------

# LangChain's usual ReAct prompt (hwchase17/react), word for word, as the eval uses it.
REACT = (Path(__file__).parent / "eval" / "react.txt").read_text(encoding="utf-8").rstrip("\n") + "\nThought:{agent_scratchpad}"


def langchain_agent(model: str, question: str, seen: list | None = None):
    pytest.importorskip("langchain_classic")
    from langchain_classic.agents import AgentExecutor, create_react_agent
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.prompts import PromptTemplate
    from langchain_core.tools import tool
    from langchain_openai import OpenAI

    @tool
    def multiply(text: str) -> str:
        """Multiply two whole numbers given as 'a, b'."""
        numbers = [int(n) for n in text.replace("'", " ").replace(",", " ").split() if n.isdigit()]
        return str(numbers[0] * numbers[1]) if len(numbers) == 2 else "give two whole numbers, as 'a, b'"

    class Seen(BaseCallbackHandler):  # what LangChain itself says it sent and got back
        def on_llm_start(self, serialized, prompts, **kwargs):
            seen.append(("sent", prompts[0]))

        def on_llm_end(self, response, **kwargs):
            seen.append(("got", response.generations[0][0].text))

    def run(url: str) -> str:
        llm = OpenAI(model=model, base_url=url, api_key=KEY, temperature=0, max_tokens=96, max_retries=0, callbacks=[Seen()] if seen is not None else [])
        agent = create_react_agent(llm, [multiply], PromptTemplate.from_template(REACT))
        executor = AgentExecutor(agent=agent, tools=[multiply], max_iterations=3, handle_parsing_errors=True)
        return executor.invoke({"input": question})["output"]

    return run


def test_langchain_react_agent_records_replays_offline_and_fails_on_a_changed_prompt(tmp_path, server):
    url, model = server
    seen: list = []
    answer, path, text, record = recorded(tmp_path / "c", url, langchain_agent(model, "What is 7 times 6?", seen))
    assert KEY not in text
    spans = record.transcript.spans
    sent, got = [t for k, t in seen if k == "sent"], [t for k, t in seen if k == "got"]
    assert spans[0].author is Author.DEVELOPER and spans[0].text == sent[0]  # the prompt LangChain built
    assert record.transcript.texts_by(Author.MODEL) == got  # each completion, as LangChain got it
    (run,) = load(tmp_path / "c")
    assert [call.prompt for call in run] == sent  # every prompt, byte for byte, from the transcript
    for span in spans[2::2]:  # what LangChain appended after each completion: its observation and cue
        assert span.author is Author.CODE and (span.text.startswith("\nObservation: ") or span.text.startswith(REWRITTEN))
    page = tmp_path / "lesson.html"  # the lesson: the buffer LangChain really built, in the stepper and the page
    stepped = CliRunner().invoke(app, ["step", str(path), "--frame", "2"], env={"COLUMNS": "120", "NO_COLOR": "1"})
    assert stepped.exit_code == 0 and "Frame 2 of" in stepped.output and "Question: What is 7 times 6?" in stepped.output
    assert CliRunner().invoke(app, ["export", str(path), "--html", str(page)]).exit_code == 0
    replayed = through(tmp_path / "c", "none", None, langchain_agent(model, "What is 7 times 6?"))
    assert replayed == answer
    openai = pytest.importorskip("openai")
    with pytest.raises(openai.BadRequestError) as e:
        through(tmp_path / "c", "none", None, langchain_agent(model, "What is 7 times 5?"))
    assert "-developer | Question: What is 7 times 6?" in str(e.value) and "+developer | Question: What is 7 times 5?" in str(e.value)


# --- the OpenAI SDK's chat completions with tools ------------------------------------------

TOOLS = [{"type": "function", "function": {"name": "multiply", "description": "Multiply two whole numbers.",
          "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}]  # fmt: skip


def sdk_agent(model: str, question: str, sent_back: list | None = None):
    """A hand-written tool loop, as many agents are. It sends the model's tool calls back with
    their arguments re-serialized compactly, as a framework that parses them does."""
    openai = pytest.importorskip("openai")

    def run(url: str) -> str:
        client = openai.OpenAI(base_url=url, api_key=KEY, max_retries=0)
        messages = [{"role": "system", "content": "You are a calculator."}, {"role": "user", "content": question}]
        for step in range(3):
            choice = {"type": "function", "function": {"name": "multiply"}} if step == 0 else "none"
            reply = client.chat.completions.create(model=model, messages=messages, tools=TOOLS, tool_choice=choice, temperature=0, max_tokens=64, seed=0)
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            calls = [{"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": json.dumps(json.loads(c.function.arguments), separators=(",", ":"))}} for c in message.tool_calls]
            if sent_back is not None:
                sent_back.append([(c.function.arguments, mine["function"]["arguments"]) for c, mine in zip(message.tool_calls, calls)])
            messages.append({"role": "assistant", "content": message.content or "", "tool_calls": calls})
            for c in message.tool_calls:
                args = json.loads(c.function.arguments)
                messages.append({"role": "tool", "tool_call_id": c.id, "content": str(args.get("a", 0) * args.get("b", 0))})
        return "no answer"

    return run


def test_openai_sdk_chat_with_tools_records_shows_the_rewrite_and_replays_offline(tmp_path, server):
    url, model = server
    sent_back: list = []
    answer, path, text, record = recorded(tmp_path / "c", url, sdk_agent(model, "What is 7 times 6?", sent_back))
    spans = record.transcript.spans
    assert spans[0].author is Author.DEVELOPER and spans[0].text.startswith("[tools]\n") and "[user]\nWhat is 7 times 6?\n[assistant]\n" in spans[0].text
    assert spans[1].author is Author.MODEL and spans[1].text.startswith("[call ")  # the tool call, as the model wrote it
    (model_args, ours), *_ = sent_back[0]
    assert (REWRITTEN in spans[2].text) == (model_args != ours)  # a re-serialized argument is shown as a rewrite
    if model_args != ours:
        assert spans[2].text.startswith(REWRITTEN) and ours in spans[2].text and model_args in spans[1].text
    assert "[tool call" in spans[2].text  # the tool's result, as the agent sent it
    assert KEY not in text
    assert through(tmp_path / "c", "none", None, sdk_agent(model, "What is 7 times 6?")) == answer
    openai = pytest.importorskip("openai")
    with pytest.raises(openai.BadRequestError) as e:
        through(tmp_path / "c", "none", None, sdk_agent(model, "What is 8 times 6?"))
    assert "+developer | What is 8 times 6?" in str(e.value)
