"""The lesson on a real framework (issue 32): LangChain's classic ReAct agent, recorded through
the proxy from the llama.cpp server CI starts, then stepped in a real terminal with scripted
keys and exported as a page; both show the buffer LangChain built, each line by its author."""

from __future__ import annotations

import json
import re
import time

from typer.testing import CliRunner

from harness.cli import app
from tests.test_proxy_peers import langchain_agent, recorded, server  # noqa: F401 (a fixture)
from tests.test_stepper import HARNESS, tmux  # noqa: F401 (a fixture)

ROW = re.compile(r"^(developer|model|code)\s*[│▶↪]")


def shown(term, frame: str) -> list[str]:
    """The screen once the stepper shows `frame` ("Frame 2 of")."""
    for _ in range(100):
        if (screen := term.screen()) and screen[0].startswith(frame):
            return screen
        time.sleep(0.1)
    raise AssertionError(f"the stepper never showed {frame!r}: {term.screen()}")


def test_a_teacher_steps_through_the_buffer_langchain_built_and_exports_its_page(tmp_path, server, tmux):  # noqa: F811
    url, model = server
    _, path, text, record = recorded(tmp_path / "c", url, langchain_agent(model, "What is 7 times 6?"))
    last = len(record.transcript.spans) - 1  # frames 0 to last, one a span
    assert last >= 2  # the prompt, a completion, what LangChain appended
    term = tmux(120, 40, f"{HARNESS} step {path}")
    first = shown(term, f"Frame 0 of {last}")
    assert any(line.startswith("developer") and "Question: What is 7 times 6?" in line for line in first), first
    authors = set()
    for k in range(1, last + 1):
        term.keys("Right")  # the keys a teacher presses, one step at a time
        authors |= {m[1] for line in shown(term, f"Frame {k} of {last}") if (m := ROW.match(line))}
    assert authors == {"developer", "model", "code"}, authors
    term.keys("End")
    end = shown(term, f"Frame {last} of {last}")
    assert any(line.startswith("code ") and "Observation:" in line for line in end), end  # LangChain's observation, by code
    term.keys("q")
    page = tmp_path / "lesson.html"
    assert CliRunner().invoke(app, ["export", str(path), "--html", str(page)]).exit_code == 0
    data = json.loads(re.search(r'<script id="run" type="application/json">(.*?)</script>', page.read_text(), re.S)[1])
    frames = data["frames"]
    assert {f["author"] for f in frames} == {"developer", "model", "code"}
    assert "".join(f["added"] for f in frames) == "".join(span.text for span in record.transcript.spans)  # the whole buffer, as sent
