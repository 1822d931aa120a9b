"""The HTML stepper, opened in a real headless Chromium through Playwright.

Locally the browser test skips, with its reason, when Chromium or Playwright is missing;
in CI (CI is set) it must run, so there it fails instead. Screenshots of the Nimbus run
land in tests/screenshots/.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
import regex
from typer.testing import CliRunner

from harness.cli import app
from harness.events import StopReason
from harness.record import open_run
from harness.run_record import CallRecord, RunRecord
from harness.render.html import page
from harness.transcript import Transcript

runner = CliRunner()
SHOTS = Path(__file__).parent / "screenshots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-extensions",
]  # fmt: skip


def test_the_page_is_self_contained_and_never_parses_model_text_as_html():
    record = open_run("nimbus")
    text = page(record, "t")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)  # nothing fetched from anywhere
    assert "@import" not in text and "<link" not in text
    assert "innerHTML" not in text
    hostile = Transcript()
    hostile.append("model", "</script><script>alert(1)</script><!--")
    assert "</script><script>alert(1)" not in page(RunRecord(hostile, StopReason.MAX_STEPS), "t")


def test_export_writes_a_file_and_refuses_to_overwrite_one_it_did_not_write(tmp_path):
    out = tmp_path / "n.html"
    assert runner.invoke(app, ["export", "nimbus", "--html", str(out)]).exit_code == 0
    assert runner.invoke(app, ["export", "nimbus", "--html", str(out)]).exit_code == 0  # ours: replaced
    mine = tmp_path / "mine.html"
    mine.write_text("<p>my page</p>", encoding="utf-8")
    result = runner.invoke(app, ["export", "nimbus", "--html", str(mine)])
    assert result.exit_code == 2 and "not overwriting" in result.stderr
    assert mine.read_text(encoding="utf-8") == "<p>my page</p>"


@pytest.fixture(scope="module")
def browser():
    reason = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "playwright is not installed (pip install -e '.[test]')"
    if CHROMIUM is None:
        reason = "chromium is not installed (apt-get install chromium; .ci/run does)"
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"the browser test must run in CI: {reason}")
        pytest.skip(reason)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()


def test_the_stepper_in_a_real_browser(browser, tmp_path):
    out = tmp_path / "nimbus.html"
    assert runner.invoke(app, ["export", "nimbus", "--html", str(out)]).exit_code == 0
    page_ = browser.new_page(viewport={"width": 1280, "height": 900})
    requests, problems = [], []
    page_.on("request", lambda r: requests.append(r.url))
    page_.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page_.on("pageerror", lambda e: problems.append(str(e)))
    page_.goto(out.as_uri())
    counter, buffer = page_.locator("#counter"), page_.locator("#buffer")
    assert counter.inner_text() == "Frame 0 of 5"
    SHOTS.mkdir(exist_ok=True)
    page_.screenshot(path=str(SHOTS / "nimbus-step-0.png"), full_page=True)

    page_.keyboard.press("ArrowRight")
    page_.keyboard.press("ArrowRight")
    assert counter.inner_text() == "Frame 2 of 5"
    assert buffer_text(page_).rstrip().endswith("Observation: 99.8 GB of 100 GB used")
    assert page_.locator("#buffer .newest .who").inner_text().lower() == "code"
    assert page_.locator("#why").inner_text().startswith("Code has spoken")
    page_.screenshot(path=str(SHOTS / "nimbus-step-2.png"), full_page=True)

    page_.keyboard.press("ArrowLeft")
    assert "quota was fine" in page_.locator("#buffer .ghost .cut").inner_text()  # the cut, as a ghost
    assert page_.locator("#sent").inner_text().startswith("completion = model(buffer): the whole buffer, 599")

    page_.keyboard.press("End")
    assert counter.inner_text() == "Frame 5 of 5"
    assert page_.locator("#why").inner_text().startswith("The loop stopped: final_answer.")
    page_.screenshot(path=str(SHOTS / "nimbus-step-5.png"), full_page=True)

    page_.locator("#first").click()
    assert counter.inner_text() == "Frame 0 of 5"
    assert page_.locator("svg[aria-label='characters sent per model call']").count() == 1
    assert requests == [out.as_uri()]  # the page itself and nothing else
    assert problems == []
    page_.close()


def buffer_text(page_) -> str:
    """The buffer as the page holds it: its rows' text, one line each (without gutters)."""
    return page_.evaluate("Array.from(document.querySelectorAll('#buffer .row:not(.note):not(.ghost) .txt')).map(e => e.textContent).join('\\n')")


def test_printing_gives_every_step_with_its_three_facts(browser, tmp_path):
    """A printout at any step holds the whole lesson: every step's part, what was cut, the facts."""
    out = tmp_path / "nimbus.html"
    runner.invoke(app, ["export", "nimbus", "--html", str(out)])
    page_ = browser.new_page()
    page_.goto(out.as_uri() + "#step-5")
    page_.emulate_media(media="print")
    assert not page_.locator(".controls").is_visible() and not page_.locator("#buffer").is_visible()
    steps = page_.locator("#printout .print-step")
    assert steps.count() == 6
    for k in range(6):
        step = steps.nth(k)
        assert step.locator("h2").inner_text() == f"Frame {k} of 5"
        assert [dd.inner_text() != "" for dd in step.locator("dd").all()] == [True] * 3
        assert step.locator(".row:not(.note):not(.ghost) .who").count() > 0
    assert "quota was fine, must be a network issue" in steps.nth(1).locator(".ghost .cut").inner_text()
    assert steps.nth(1).locator(".ghost").inner_text().startswith("cut\n✂\ncut by the stop sequence, never in the buffer:")
    SHOTS.mkdir(exist_ok=True)
    page_.screenshot(path=str(SHOTS / "nimbus-print.png"), full_page=True)  # the print media, as a picture
    pdf = page_.pdf()
    assert pdf[:4] == b"%PDF"
    page_.close()


# Chromium's own page zoom at 150 % on a 1024×768 window gives the page a 683×512 CSS pixel
# viewport drawn at 1.5 device pixels per CSS pixel: that is what is emulated here.
SIZES = {
    "1280x900": {"viewport": {"width": 1280, "height": 900}},
    "1024x768-zoom150": {"viewport": {"width": 683, "height": 512}, "device_scale_factor": 1.5},
}
RUNS = {"nimbus": ["nimbus"], "governed-research": ["governed-research"], "nimbus-no-stop": ["nimbus", "--no-stop"]}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pages")
    for name, args in RUNS.items():
        result = runner.invoke(app, ["export", *args, "--html", str(folder / f"{name}.html")])
        assert result.exit_code == 0, result.output
    return folder


def box(locator) -> dict:
    b = locator.bounding_box()
    assert b is not None, f"{locator} is not on the page"
    return b


def overlaps(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["width"] - 0.5 and b["x"] < a["x"] + a["width"] - 0.5 and a["y"] < b["y"] + b["height"] - 0.5 and b["y"] < a["y"] + a["height"] - 0.5


def inside(b: dict, area: dict) -> bool:
    return b["y"] >= area["y"] - 0.5 and b["y"] + b["height"] <= area["y"] + area["height"] + 0.5


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("run", RUNS)
def test_the_page_on_a_screen_and_a_projector(browser, exported, run, size):
    """At each size, at steps 0, 1 and the last: nothing overlaps, the title, the newest part
    and what was cut are in view, and every line of the buffer names its author."""
    context = browser.new_context(**SIZES[size])
    page_ = context.new_page()
    problems = []
    page_.on("pageerror", lambda e: problems.append(str(e)))
    uri = (exported / f"{run}.html").as_uri()
    page_.goto(uri)
    last = int(page_.locator("#counter").inner_text().split()[-1])
    view = {"x": 0, "y": 0, "width": SIZES[size]["viewport"]["width"], "height": SIZES[size]["viewport"]["height"]}
    for k in (0, 1, last):
        page_.goto(f"{uri}#frame-{k}")  # a link to a step opens at that step
        page_.reload()
        assert page_.locator("#counter").inner_text() == f"Frame {k} of {last}"
        SHOTS.mkdir(exist_ok=True)
        page_.screenshot(path=str(SHOTS / f"{run}-{size}-step-{k}.png"))
        # The page's blocks, one under (or beside) the other.
        blocks = [box(page_.locator(sel)) for sel in ("h1", ".controls", "#buffer", "aside") if page_.locator(sel).is_visible()]
        blocks += [box(legend) for legend in page_.locator(".legend").all()]
        assert not any(overlaps(a, b) for i, a in enumerate(blocks) for b in blocks[i + 1 :])
        assert inside(box(page_.locator("h1")), view)
        # Every row of the buffer: under the one before it, its gutter, mark and text side by side.
        rows = page_.locator("#buffer .row").all()
        boxes = [box(r) for r in rows]
        assert all(b["y"] >= a["y"] + a["height"] - 0.5 for a, b in zip(boxes, boxes[1:]))
        for row in rows[-12:]:
            cells = [box(row.locator(c)) for c in (".who", ".mark", ".txt")]
            assert not overlaps(cells[0], cells[1]) and not overlaps(cells[1], cells[2]) and not overlaps(cells[0], cells[2])
        # Each line's author, from the DOM: the gutter names the authors of its segments.
        authors = page_.evaluate("""Array.from(document.querySelectorAll('#buffer .row:not(.note):not(.ghost)')).map(r =>
            [r.querySelector('.who').textContent, Array.from(r.querySelectorAll('.seg')).map(s => s.dataset.author)])""")
        assert authors and all(who.split("+") == list(dict.fromkeys(segs)) for who, segs in authors), authors
        # In view: the newest part's rows, and what was cut (at step 1 of nimbus).
        area = box(page_.locator("#buffer"))
        assert inside(area, view)
        newest = page_.locator("#buffer .row.newest").all()
        assert newest and inside(box(newest[0]), area)
        ghost = page_.locator("#buffer .ghost")
        if run == "nimbus" and k == 1:
            assert ghost.count() == 1 and inside(box(ghost), area)
            assert "quota was fine" in ghost.inner_text()
        else:
            assert ghost.count() == 0
    page_.locator("h1").click()  # the keys go to the page, not to a control that kept the focus
    page_.keyboard.press("Home")
    page_.wait_for_function("location.hash === '#frame-0'", timeout=10_000)  # the address follows the step
    assert page_.url.endswith("#frame-0") and page_.locator("#counter").inner_text() == f"Frame 0 of {last}"
    assert problems == []
    context.close()


def test_denied_and_withheld_text_is_marked_on_the_page(browser, exported):
    page_ = browser.new_page()
    page_.goto((exported / "governed-research.html").as_uri() + "#frame-3")
    denied = page_.locator("#buffer .row.denied")
    assert denied.count() == 1 and denied.locator(".txt").inner_text() == "Action: post_summary(4.2 summary)"
    assert denied.locator(".mark").inner_text() == "✗" and denied.locator(".who").inner_text().lower() == "model"
    withheld = page_.locator("#buffer .row.withheld")
    assert withheld.locator(".txt").inner_text().startswith("Final Answer: Posted: 4.2")
    note = page_.locator("#buffer .row.withheld + .row.note")
    assert note.inner_text().endswith("in the buffer, not shown to the user: the final answer was withheld")
    assert "✗ in the buffer, not shown to the user" in page_.locator(".legend").last.inner_text()
    assert "✂ cut by the stop sequence: never in the buffer" in page_.locator(".legend").last.inner_text()
    # The notice mark is on the notice line, not on the observation after it.
    page_.goto((exported / "governed-research.html").as_uri() + "#step-2")
    page_.reload()
    notices = page_.locator("#buffer .row.notice")
    assert notices.count() == 1 and notices.locator(".txt").inner_text().startswith("Notice: ")
    page_.close()


def test_a_page_from_a_run_without_the_stop_sequence_says_so(browser, exported):
    page_ = browser.new_page()
    page_.goto((exported / "nimbus-no-stop.html").as_uri())
    said = "harness · Nimbus uploads — run with no stop sequence (--no-stop): nothing cut what the model wrote"
    assert page_.title() == said and page_.locator("h1").inner_text() == said
    assert page_.locator(".banner").inner_text().startswith("The stop sequence was off for this run (--no-stop)")
    # Nothing on the page says the stop sequence stopped, or cut, anything in this run.
    shown = page_.locator("body").inner_text()
    assert "stops a made-up observation" not in shown and "cut by the stop sequence" not in shown
    assert "✂ this run had no stop sequence (--no-stop)" in page_.locator(".legend").last.inner_text()
    page_.goto((exported / "nimbus.html").as_uri())
    assert page_.locator(".banner").count() == 0
    assert page_.title() == "harness · Nimbus uploads: the stop sequence stops a made-up observation"
    assert "✂ cut by the stop sequence: never in the buffer" in page_.locator(".legend").last.inner_text()
    page_.close()


HOSTILE = [
    '<img src=x onerror="window.pwned=1">',
    "<img src=x onerror=window.pwned=1><img src=y onerror=alert(1)>",
    "</script><script>window.pwned=1</script>",
    "<!--<script>window.pwned=1</script>",
    "__DATA__ __TITLE__ __CHART__ \u2028\u2029 & &amp; <svg onload=window.pwned=1>",
]


def test_hostile_text_stays_text_in_a_real_browser(browser, tmp_path):
    """Injection through any placeholder: the title, model and code text, metadata, the cut."""
    title = "__DATA__</title><script>window.pwned=1</script><img src=x onerror=window.pwned=1> __TITLE__"
    hostile = "".join(HOSTILE)
    transcript = Transcript()
    transcript.append("developer", f"Question: {hostile}\n")
    transcript.append("model", f"Thought: {hostile}\nFinal Answer: {hostile}\n")
    transcript.append("code", f"Observation: {hostile}\n")
    withheld = (len(f"Thought: {hostile}\n"), len(f"Thought: {hostile}\nFinal Answer: {hostile}\n"), "answer")
    record = RunRecord(transcript, StopReason.FINAL_ANSWER, hostile, 1, calls=(CallRecord(f"Observation: {hostile}", "stop", hidden=(withheld,)),))
    out = tmp_path / "hostile.html"
    out.write_text(page(record, title), encoding="utf-8")

    page_ = browser.new_page()
    dialogs, requests, errors = [], [], []
    page_.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page_.on("request", lambda r: requests.append(r.url))
    page_.on("pageerror", lambda e: errors.append(str(e)))
    page_.goto(out.as_uri())
    page_.keyboard.press("End")
    page_.wait_for_timeout(200)  # an onerror handler would have fired by now
    assert page_.evaluate("window.pwned") is None and dialogs == [] and errors == []
    assert requests == [out.as_uri()]  # the <img src=x> was never loaded
    assert page_.locator("h1").inner_text() == title
    assert page_.title() == title
    assert page_.locator("#counter").inner_text() == "Frame 2 of 2"
    assert buffer_text(page_) == transcript.text.removesuffix("\n")  # every byte, as text
    assert hostile in page_.locator("#why").inner_text()
    page_.keyboard.press("ArrowLeft")
    assert page_.locator("#buffer .ghost .cut").inner_text() == f"Observation: {hostile}"
    assert page_.locator("#buffer .withheld .txt").inner_text() == f"Final Answer: {hostile}"  # marked, and still text
    assert page_.locator("script").count() == 2  # the data and the page's own script, nothing injected
    page_.close()


def test_placeholders_are_filled_once_and_the_policy_admits_only_the_page_s_own_script():
    text = page(RunRecord(Transcript(), StopReason.MAX_STEPS), "__DATA__ __CSP__")
    assert "<title>__DATA__ __CSP__</title>" in text and "<h1>__DATA__ __CSP__</h1>" in text
    policy = regex.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', text)[1]
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy
    assert regex.search(r"script-src 'sha256-[A-Za-z0-9+/=]+';", policy)


def test_the_cost_chart_of_a_long_run_shows_the_curve(browser, tmp_path):
    out = tmp_path / "savings.html"
    assert runner.invoke(app, ["export", "savings", "--html", str(out)]).exit_code == 0
    page_ = browser.new_page(viewport={"width": 1000, "height": 700})
    page_.goto(out.as_uri())
    dots = page_.locator("section.cost svg circle[fill='#b91c1c']")
    assert dots.count() == 12
    heights = [box(d)["y"] for d in dots.all()]  # the screen's y grows downwards
    rises = [a - b for a, b in zip(heights, heights[1:])]
    assert all(r > 0 for r in rises) and rises[-1] > rises[0] * 1.5  # it rises, and faster as it goes
    page_.locator("section.cost").screenshot(path=str(SHOTS / "savings-cost.png"))
    page_.close()


def test_a_chat_run_s_page_shows_what_each_call_was_sent_and_hostile_text_stays_text(browser, tmp_path):
    """The "what was sent" toggle: only on a chat run's page, on a model step the messages
    its call was sent (role, then text), the same as `harness show --messages`; hostile
    text in a message is text; the page of a run that did not go through chat has none."""
    import json

    from harness.backends.messages import sent_counts
    from harness.files import read_input
    from harness.saved import load_record

    hostile = "".join(HOSTILE)
    scenario = tmp_path / "chat.toml"
    completions = json.dumps([f"Thought: {hostile}\nAction: calculator(1 + 1)\n", "Final Answer: 2\n"])
    scenario.write_text(f"question = {json.dumps('1+1? ' + hostile)}\nendpoint = \"chat\"\ncompletions = {completions}\n[tools.calculator]\n", encoding="utf-8")
    saved, out = tmp_path / "chat.txt", tmp_path / "chat.html"
    assert runner.invoke(app, ["run", str(scenario), "--save", str(saved)]).exit_code == 0
    assert runner.invoke(app, ["export", str(saved), "--html", str(out)]).exit_code == 0
    run, counts = sent_counts(load_record(read_input(saved), str(saved)).transcript.spans)
    calls = [run[:n] for n in counts]

    page_ = browser.new_page(viewport={"width": 1280, "height": 900})
    dialogs, requests, errors = [], [], []
    page_.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page_.on("request", lambda r: requests.append(r.url))
    page_.on("pageerror", lambda e: errors.append(str(e)))
    page_.goto(out.as_uri())
    button, box = page_.locator("#show-sent"), page_.locator("#messages")
    assert button.is_visible() and button.is_disabled()  # step 0: no call yet
    assert button.inner_text() == "No call at this frame: nothing was sent"

    def shown() -> list[list[str]]:
        return page_.evaluate("Array.from(document.querySelectorAll('#messages .msg')).map(m => [m.querySelector('.role').textContent, m.querySelector('.content').textContent])")

    page_.keyboard.press("End")  # the last step: call 2
    assert not box.is_visible()
    button.click()
    assert box.is_visible() and button.get_attribute("aria-expanded") == "true"
    assert shown() == [[m["role"], m["content"]] for m in calls[1]]  # what show --messages prints
    assert [role for role, _ in shown()] == ["user", "assistant", "user"]
    SHOTS.mkdir(exist_ok=True)
    page_.screenshot(path=str(SHOTS / "chat-what-was-sent.png"), full_page=True)
    assert f"Thought: {hostile}\n" in shown()[1][1] and shown()[0][1].endswith(f"1+1? {hostile}\n")
    page_.keyboard.press("ArrowLeft")
    page_.keyboard.press("ArrowLeft")  # call 1: the toggle stays open, the messages are that call's
    assert shown() == [[m["role"], m["content"]] for m in calls[0]]
    page_.keyboard.press("m")
    assert not box.is_visible() and button.inner_text() == "Show the 1 message this call was sent (m)"
    page_.wait_for_timeout(200)  # an onerror handler would have fired by now
    assert page_.evaluate("window.pwned") is None and dialogs == [] and errors == []
    assert requests == [out.as_uri()] and page_.locator("script").count() == 2

    page_.emulate_media(media="print")  # the printout: each model step's count, the messages once
    printed = page_.locator("#printout")
    said = [dd.inner_text() for dd in printed.locator(".print-step dd").all() if "run's messages" in dd.inner_text()]
    assert said == [f"the first {n} of the run's messages (listed at the end)" for n in (1, 3)]
    listed = page_.evaluate("Array.from(document.querySelectorAll('#printout .print-messages .msg')).map(m => [m.querySelector('.role').textContent, m.querySelector('.content').textContent])")
    assert listed[:3] == [[m["role"], m["content"]] for m in calls[1]] and printed.locator(".print-messages").count() == 1
    page_.wait_for_timeout(200)
    assert page_.evaluate("window.pwned") is None and dialogs == [] and errors == []
    page_.emulate_media(media="screen")

    plain = tmp_path / "nimbus.html"
    assert runner.invoke(app, ["export", "nimbus", "--html", str(plain)]).exit_code == 0
    page_.goto(plain.as_uri())
    page_.keyboard.press("ArrowRight")
    page_.keyboard.press("m")
    assert not page_.locator("#chat").is_visible() and not box.is_visible()
    assert page_.locator("#printout .print-messages").count() == 0
    page_.close()
