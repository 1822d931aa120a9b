"""The transcript for people: one row per record, the author's name and colour beside it.

Authorship never rests on colour alone: each row also carries the author's name, as in
the save format. Text the stop sequence cut is shown dimmed under the model's row, marked
as not part of the buffer. Model text is printed as Text objects, never as markup.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from harness.transcript import Author, Span, Transcript

STYLES = {Author.DEVELOPER: "blue", Author.MODEL: "green", Author.CODE: "yellow"}
_WIDTH = 9


def legend() -> Text:
    text = Text("authors: ")
    for author, style in STYLES.items():
        text.append(f" {author.value} ", style=f"reverse {style}")
        text.append(" ")
    return text


def _rows(span: Span) -> list[tuple[str, str]]:
    """(separator, text) per line segment, as in the save format."""
    pieces = span.text.split("\n")
    rows = [("|", piece) for piece in pieces[:-1]]
    if pieces[-1] or not rows:
        rows.append(("\\", pieces[-1]))
    return rows


def transcript_text(transcript: Transcript, cuts: dict[str, str] | None = None) -> Text:
    out = Text()
    model_calls = 0
    for span in transcript.spans:
        style = STYLES[span.author]
        for sep, piece in _rows(span):
            out.append(f"{span.author.value:<{_WIDTH}} {sep} ", style=f"bold {style}")
            out.append(piece, style=style)
            out.append("\n")
        if span.author is Author.MODEL:
            model_calls += 1
            if cut := (cuts or {}).get(str(model_calls)):
                out.append(f"{'':<{_WIDTH}} ✂ ", style="dim")
                out.append(f"cut by the stop sequence, never in the buffer: {_preview(cut)}", style="dim italic")
                out.append("\n")
    return out


def summary(info: dict[str, Any]) -> Text:
    text = Text(f"stopped: {info.get('stop_reason')} after {info.get('steps')} steps", style="bold")
    if info.get("final_answer") is not None:
        text.append("\nfinal answer: ", style="bold")
        text.append(str(info["final_answer"]))
    return text


def print_transcript(console: Console, transcript: Transcript, info: dict[str, Any]) -> None:
    console.print(legend())
    console.print(transcript_text(transcript, info.get("cuts")), end="")
    console.print(summary(info))


def _preview(text: str, limit: int = 120) -> str:
    flat = text.replace("\n", "⏎")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
