"""Control tokens in text that code writes: made visible, and inert.

A chat template's turns are marked by control tokens that are also plain strings:
`<|im_end|>` ends a ChatML turn. A server tokenizes the whole prompt with special tokens
parsed, so a tool result that *contains* the string `<|im_end|>` would become the real
control token and end the assistant's turn in the middle of an observation. Text that
code writes (observations, notices) therefore goes through `neutralise` first:

    neutralise("done<|im_end|>")   ->  "done<¦im_end¦>"
    neutralise("[INST] hi [/INST]") ->  "[¦INST¦] hi [¦/INST¦]"

One rule, so a reader can undo it by eye: a delimiter `|` becomes a broken bar `¦`, and a
delimiter without one gets `¦` inside its brackets. The result still reads as what it
was, but no tokenizer has it as a special token. It is applied again to its own output
without change.

Covered: `<|anything|>` (ChatML's im_start/im_end/endoftext, Llama 3's eot_id and
start_header_id, Phi's end), DeepSeek's fullwidth-barred `<｜anything｜>`
(`<｜end▁of▁sentence｜>`, `<｜Assistant｜>`), `<s>` and `</s>`, `[INST]` and `[/INST]`, Gemma's
`<start_of_turn>`/`<end_of_turn>`, and the code-model tokens SmolLM2's vocabulary marks
as control (`<file_sep>`, `<jupyter_code>`, ...). Left out: other vocabularies' tokens
that look like ordinary text; the developer's prompt and the model's own text, which are
what they are and are never changed.
"""

from __future__ import annotations

import regex

# <|name|> with a bounded name of no bars, brackets or spaces; or one of a few literals.
# Every alternative starts with a literal and has only bounded repeats: linear, whatever the text.
_SPACE = r"\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_BARRED = rf"<\|(?P<name>[^|<>{_SPACE}]{{1,64}})\|>"
_WORDS = (
    "s|/s|start_of_turn|end_of_turn|"
    "filename|reponame|gh_stars|file_sep|empty_output|"
    "issue_start|issue_comment|issue_closed|"
    "jupyter_start|jupyter_text|jupyter_code|jupyter_output|jupyter_script|"
    "commit_before|commit_msg|commit_after|repo_name"
)
# DeepSeek's own: fullwidth bars, words joined by U+2581 (<｜end▁of▁sentence｜>, <｜User｜>).
_WIDE = rf"<\uff5c(?P<wide>[^\uff5c<>{_SPACE}]{{1,64}})\uff5c>"
PATTERN = regex.compile(rf"{_BARRED}|{_WIDE}|<(?P<word>{_WORDS})>|\[(?P<inst>/?INST)\]")


def neutralise(text: str) -> str:
    """`text` with every control-token string broken visibly (see the module docstring)."""
    if "<" not in text and "[" not in text:  # every control token starts with one of them
        return text
    return PATTERN.sub(_break, text)  # (linear on any text: no timeout needed)


def _break(match: regex.Match[str]) -> str:
    if match["name"] is not None:
        return f"<¦{match['name']}¦>"
    if match["wide"] is not None:
        return f"<¦{match['wide']}¦>"
    if match["word"] is not None:
        return f"<¦{match['word']}¦>"
    return f"[¦{match['inst']}¦]"
