"""One self-contained HTML file: the stepper, the three facts per frame, the cost chart.

No network: the page, its style, script and data are all in the file. The run's data
travels as JSON and is put on the page with textContent, so nothing the model wrote is
parsed as HTML; a Content-Security-Policy allows only the page's own style and script.
"""

from __future__ import annotations

import base64
import hashlib
import re
from importlib.resources import files

from harness.escape import for_html, for_script_json
from harness.render.frames import CHARS_PER_TOKEN, COUNTS, KINDS, NO_STOP, CallCost, cost_cells, costs, frames, parts, stop_was_off
from harness.render.live import CUT_BY, never_ran
from harness.render.sent import SentMessages
from harness.run_record import RunRecord

PAGE_HEADER = "<!doctype html>\n<!-- harness page v1 -->\n"  # how a page of ours is recognised: it begins so


def page(record: RunRecord, title: str) -> str:
    fs = frames(record)
    sent = SentMessages(record, fs)  # a chat run: its messages once, and how many each frame's call was sent
    data = {
        "frames": [
            {"author": f.author.value, "added": f.added, "parts": parts(f), "cut": f.cut, "cut_by": f.cut_by, "sent": f.sent, "why": f.why,
             "messages": sent.count_of(i), "never_ran": never_ran(f.unran) if f.unran else ""}
            for i, f in enumerate(fs)
        ],
        "chat": sent.chat,
        "messages": [[m["role"], m["content"]] for m in sent.messages],
        "words": {**KINDS, "cut": {k: f"{why}, never in the buffer:" for k, why in CUT_BY.items()}},
    }
    rows = costs(record.transcript)
    template = files("harness.render").joinpath("page.html").read_text(encoding="utf-8")
    hashes = {}  # the policy: nothing loads from anywhere; only the template's own <style> and <script> apply
    for tag in ("style", "script"):
        bodies = re.findall(rf"<{tag}>(.*?)</{tag}>", template, flags=re.DOTALL)
        hashes[tag] = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(b.encode()).digest()).decode()}'" for b in bodies)
    values = {
        "CSP": f"default-src 'none'; style-src {hashes['style']}; script-src {hashes['script']}; base-uri 'none'; form-action 'none'",
        "TITLE": for_html(title),
        "BANNER": f'<p class="banner" role="note">{for_html(NO_STOP)}</p>' if stop_was_off(record) else "",
        "CUT_LEGEND": "✂ this run had no stop sequence (--no-stop): nothing it wrote was cut by one" if stop_was_off(record) else "✂ cut by the stop sequence: never in the buffer",
        "CHART": chart(rows),
        "TABLE": table(rows, [c.tokens for c in record.calls]),
        "DATA": for_script_json(data),
    }
    return _PLACEHOLDER.sub(lambda m: values[m[1]], template)


_PLACEHOLDER = re.compile(r"__(CSP|TITLE|BANNER|CUT_LEGEND|CHART|TABLE|DATA)__")


def chart(rows: list[CallCost], width: int = 560, height: int = 240) -> str:
    """Characters sent so far (the whole buffer, every call) against what was new."""
    if not rows:
        return "<p>No model calls: nothing was sent.</p>"
    pad, top = 56, max(r.total_sent for r in rows) or 1
    step = (width - 2 * pad) / max(1, len(rows) - 1)

    xs = [f"{pad + i * step:.1f}" for i in range(len(rows))]

    def line(values: list[int], colour: str, dash: str) -> str:
        points = [(x, f"{height - pad - v / top * (height - 2 * pad):.1f}") for x, v in zip(xs, values)]
        dots = "".join(f'<circle cx="{x}" cy="{y}" r="3" fill="{colour}"/>' for x, y in points)
        return f'<polyline points="{" ".join(f"{x},{y}" for x, y in points)}" fill="none" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/>{dots}'

    labels = "".join(f'<text x="{x}" y="{height - pad + 16}" text-anchor="middle" font-size="11">{r.call}</text>' for x, r in zip(xs, rows))
    return (
        f'<svg role="img" aria-label="characters sent per model call" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg" font-family="system-ui, sans-serif">'
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#9ca3af"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#9ca3af"/>'
        f'<text x="{pad - 6}" y="{pad + 4}" text-anchor="end" font-size="11">{top:,}</text>'
        f'<text x="{pad - 6}" y="{height - pad + 4}" text-anchor="end" font-size="11">0</text>'
        f'<text x="{width / 2}" y="{height - 12}" text-anchor="middle" font-size="12">model call</text>'
        f"{labels}"
        + line([r.total_sent for r in rows], "#b91c1c", "")
        + line([r.total_new for r in rows], "#1d4ed8", "6 4")
        + f'<text x="{pad + 8}" y="{pad - 24}" font-size="12" fill="#b91c1c">— characters sent, all calls (the whole buffer each time)</text>'
        f'<text x="{pad + 8}" y="{pad - 8}" font-size="12" fill="#1d4ed8">- - what a prefix cache would have processed</text>'
        "</svg>"
    )


def table(rows: list[CallCost], tokens: list[dict | None] | None = None) -> str:
    """The cost per call, with the model's own token counts when the run recorded them."""
    counted, cells = cost_cells(rows, tokens)
    head = ["call", "prompt sent", "completion", "total sent", "with prefix cache", "cache total", "≈ tokens sent (estimate)"]
    head += [f"{COUNTS[k]} (the model's count)" for k in counted]
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in cells)
    note = f"Figures in characters. The ≈ column is an estimate (characters ÷ {CHARS_PER_TOKEN}); no tokenizer was used."
    if len(counted) == 2:
        note += " Tokens sent and evaluated are the model's own counts (evaluated: not taken from its prefix cache); ? where it gave none."
    elif counted:
        note += f" {COUNTS[counted[0]].capitalize()}: the model's own count; ? where it gave none."
    return f"<table><tr>{''.join(f'<th>{h}</th>' for h in head)}</tr>{body}</table><p><small>{note}</small></p>"
