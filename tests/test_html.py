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
    assert counter.inner_text() == "Step 0 of 5"
    SHOTS.mkdir(exist_ok=True)
    page_.screenshot(path=str(SHOTS / "nimbus-step-0.png"), full_page=True)

    page_.keyboard.press("ArrowRight")
    page_.keyboard.press("ArrowRight")
    assert counter.inner_text() == "Step 2 of 5"
    assert buffer.inner_text().rstrip().endswith("Observation: 99.8 GB of 100 GB used")
    assert page_.locator("#buffer .newest").get_attribute("data-author") == "code"
    assert page_.locator("#why").inner_text().startswith("Code has spoken")
    page_.screenshot(path=str(SHOTS / "nimbus-step-2.png"), full_page=True)

    page_.keyboard.press("ArrowLeft")
    assert "quota was fine" in page_.locator("#buffer .ghost").inner_text()  # the cut, as a ghost
    assert page_.locator("#sent").inner_text().startswith("completion = model(buffer): the whole buffer, 599")

    page_.keyboard.press("End")
    assert counter.inner_text() == "Step 5 of 5"
    assert page_.locator("#why").inner_text().startswith("The loop stopped: final_answer.")
    page_.screenshot(path=str(SHOTS / "nimbus-step-5.png"), full_page=True)

    page_.locator("#first").click()
    assert counter.inner_text() == "Step 0 of 5"
    assert page_.locator("svg[aria-label='characters sent per model call']").count() == 1
    assert requests == [out.as_uri()]  # the page itself and nothing else
    assert problems == []
    page_.close()


def test_the_page_prints_without_its_controls(browser, tmp_path):
    out = tmp_path / "nimbus.html"
    runner.invoke(app, ["export", "nimbus", "--html", str(out)])
    page_ = browser.new_page()
    page_.goto(out.as_uri())
    page_.emulate_media(media="print")
    assert not page_.locator(".controls").is_visible()
    assert page_.locator("#buffer").is_visible()
    assert page_.pdf()[:4] == b"%PDF"
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
    record = RunRecord(transcript, StopReason.FINAL_ANSWER, hostile, 1, calls=(CallRecord(f"Observation: {hostile}", "stop"),))
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
    assert page_.locator("#counter").inner_text() == "Step 2 of 2"
    assert page_.locator("#buffer").inner_text() == transcript.text  # every byte, as text
    assert hostile in page_.locator("#why").inner_text()
    page_.keyboard.press("ArrowLeft")
    assert page_.locator("#buffer .ghost").inner_text() == f"Observation: {hostile}"
    assert page_.locator("script").count() == 2  # the data and the page's own script, nothing injected
    page_.close()


def test_placeholders_are_filled_once_and_the_policy_admits_only_the_page_s_own_script():
    text = page(RunRecord(Transcript(), StopReason.MAX_STEPS), "__DATA__ __CSP__")
    assert "<title>__DATA__ __CSP__</title>" in text and "<h1>__DATA__ __CSP__</h1>" in text
    policy = regex.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', text)[1]
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy
    assert regex.search(r"script-src 'sha256-[A-Za-z0-9+/=]+';", policy)
