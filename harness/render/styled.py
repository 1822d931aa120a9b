"""Text with a style on each piece, held without rich until a terminal needs it: off a
terminal only `plain` is written, so a run that is not watched never loads rich."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

TAB_SIZE = 8  # as rich's Console expands tabs


class Styled:
    """As rich's Text: `style` is the whole text's, what is appended included; each piece's
    own style goes over it."""

    __slots__ = ("pieces", "style")

    def __init__(self, text: str = "", style: str = "") -> None:
        self.style = style
        self.pieces: list[tuple[str, str]] = [(text, "")] if text else []

    def append(self, text: str, style: str = "") -> Styled:
        if text:
            self.pieces.append((text, style))
        return self

    def append_text(self, other: Styled) -> Styled:
        """`other`'s pieces, each under `other`'s own style as well (then under this one's)."""
        self.pieces.extend((text, f"{other.style} {style}".strip()) for text, style in other.pieces)
        return self

    def __bool__(self) -> bool:
        return bool(self.pieces)

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.pieces)

    def rich(self) -> Text:
        from rich.text import Text

        out = Text(style=self.style)
        for text, style in self.pieces:
            out.append(text, style=style or None)
        return out

    def expanded(self) -> str:
        """The plain text with its tabs expanded as rich expands them (rich is needed only for a tab)."""
        text = self.plain
        if "\t" not in text:
            return text
        from rich.text import Text

        out = Text(text)
        out.expand_tabs(TAB_SIZE)
        return out.plain
