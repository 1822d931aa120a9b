"""Where a run came from: the `# source:` line of a saved transcript (harness.transcript), so
a replay can rebuild the run from that source as it is *now* and feed it the recorded turns.

    # source: {"scenario": "../../scenarios/weather.toml", "from": "transcript", "sha256": "…"}

An edit of the source that changed nothing the run shows is *only* drift of its sha256
(`only_rehashed`), which a replay check passes unless asked to be strict.

An update (`pytest --harness-update`, `harness replay --update`) keeps the recorded model
turns and rebuilds what code and the developer wrote; a kept turn that followed changed
text may contradict it, so the update says so:

    stale_turn(saved.transcript, fresh.transcript)
    -> Stale(call=2, author="code", old="Observation: shelf B2", new="Observation: shelf B3")
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from itertools import zip_longest
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, TranscriptFormatError
from harness.escape import one_line
from harness.files import Fields, not_a_file
from harness.prompts import NAME  # a shipped scenario is named as a template is: a file name, no path
from harness.transcript import Author, Transcript

ORIGINS = ("transcript", "root", "shipped")
# What a run may change of its scenario: all a saved file's overrides may hold (a tool or a
# prompt there would be the file's own code, put over the scenario it names).
RUN_CHANGES = ("max_steps", "use_stop", "endpoint", "interrupt", "model_error", "redact")
AGENT_REF = r"[A-Za-z_][\w.]{0,199}:[A-Za-z_]\w{0,99}"  # module:attribute (compiled when first matched)
LINE_SHOWN = 60  # characters of a changed line shown in a stale turn's warning


@dataclass(frozen=True, slots=True)
class Source:
    """Where a saved run comes from (its `# source:` line): what a replay runs again."""

    scenario: str | None = None  # a path (relative to `origin`), or a shipped scenario's name
    origin: str = "root"  # written as "from"
    agent: str | None = None  # or "module:attribute" of an Agent
    question: str = ""  # an agent's question (a scenario holds its own)
    sha256: str = ""
    overrides: dict[str, Any] = field(default_factory=dict)
    file: Path | None = field(default=None, compare=False)  # the scenario file, absolute, when known

    def to_meta(self) -> dict[str, Any]:
        if self.agent is not None:
            return {"agent": self.agent, "question": self.question, "sha256": self.sha256}
        out = {"scenario": self.scenario, "from": self.origin, "sha256": self.sha256}
        return out | {"overrides": self.overrides} if self.overrides else out

    def placed(self, target: Path) -> Source:
        """The same source named relative to the folder of the file it will be saved in."""
        if self.file is None or self.origin == "shipped":
            return self
        relative = os.path.relpath(self.file, Path(target).absolute().parent)
        return replace(self, scenario=Path(relative).as_posix(), origin="transcript")


def for_scenario(file: Path, sha256: str, overrides: dict[str, Any], shipped: Path, root: Path) -> Source:
    """The source of a run of the scenario `file`: shipped (in the resolved `shipped`) by name, else relative to `root`."""
    file = file.absolute()
    if file.parent.resolve() == shipped:
        return Source(file.stem, "shipped", sha256=sha256, overrides=overrides, file=file)
    relative = Path(os.path.relpath(file, root.absolute())).as_posix()
    return Source(relative, "root", sha256=sha256, overrides=overrides, file=file)


def fingerprint(parts: Iterable[str | bytes]) -> str:
    """sha256 of the parts, each length-prefixed (so ("ab", "c") and ("a", "bc") differ)."""
    import hashlib  # (here: only a source line needs a hash)

    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        digest.update(b"%d:" % len(data) + data)
    return digest.hexdigest()


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def module_bytes(fn: Any) -> bytes:
    """The text of the module a Python tool is defined in."""
    own = getattr(fn, "__globals__", None)  # a function's own module, whatever sys.modules holds now
    if own is None:
        own = getattr(sys.modules.get(getattr(fn, "__module__", "") or ""), "__dict__", {})
    path = own.get("__file__")
    try:
        return Path(path).read_bytes() if path else b""
    except OSError:
        return b""


_SOURCE_SHA = r'(?m)^(# source: .*)"sha256": "[0-9a-f]*"'  # the source line's hash (compiled when first matched)


def only_rehashed(saved: str, fresh: str) -> bool:
    """Whether two saved files are the same, byte for byte, but for their source's sha256."""
    unhashed = [re.sub(_SOURCE_SHA, r'\1"sha256": ""', text) for text in (saved, fresh)]
    return saved != fresh and unhashed[0] == unhashed[1]


@dataclass(frozen=True)
class Stale:
    call: int  # the first model call (from 1) whose recorded turn followed text that changed
    author: str  # who wrote the text that changed: "code" or "developer"
    old: str  # its first differing line, as recorded
    new: str  # and as the source writes it now


def stale_turn(saved: Transcript, fresh: Transcript) -> Stale | None:
    """The first recorded model turn that followed text the fresh run changed (None: none did)."""
    recorded, now = saved.spans, fresh.spans
    for i, (old, new) in enumerate(zip_longest(recorded, now)):
        if old == new:
            continue
        if new is None or new.author is Author.MODEL or (old is not None and old.author is Author.MODEL) or not any(s.author is Author.MODEL for s in now[i + 1 :]):
            return None  # the fresh run ended, the model's own turn differs, or no recorded turn followed the change
        call = 1 + sum(1 for s in now[:i] if s.author is Author.MODEL)  # (one span per model call)
        lines = zip_longest(old.text.split("\n") if old is not None else [], new.text.split("\n"), fillvalue="")
        before, after = next(((x, y) for x, y in lines if x != y), ("", ""))
        return Stale(call, new.author.value, _short(before), _short(after))
    return None


def _short(line: str) -> str:
    return one_line(line if len(line) <= LINE_SHOWN else line[: LINE_SHOWN - 1] + "…")


def resolve(source: Source, where: str, transcript_folder: Path, root: Path, shipped: Path) -> Path:
    """The scenario file a source names, as it is now; a source that is gone is one error."""
    if source.origin == "shipped":
        path = shipped / f"{source.scenario}.toml"
    else:
        path = Path(os.path.normpath((transcript_folder if source.origin == "transcript" else root) / str(source.scenario)))
    if why := not_a_file(path):
        relative = "this file's folder" if source.origin == "transcript" else source.origin
        said = "is gone" if why == "no such file" else why
        raise HarnessError(f"{where}: source", f"the scenario it was recorded from {said}: {source.scenario!r} (from {relative}, looked for {path})")
    return path


def from_meta(value: Any, where: str) -> Source:
    """The `source` line of a saved file (untrusted), every field checked."""
    if not isinstance(value, dict):
        raise TranscriptFormatError(f"{where}: metadata source", "must be a table naming a scenario or an agent")
    read = Fields(value, f"{where}: metadata source.", TranscriptFormatError)
    sha = read.text("sha256", "")
    if sha and not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise read.fail("sha256", "must be 64 hex digits")
    if "agent" in value:
        if not re.fullmatch(AGENT_REF, agent := read.text("agent")):
            raise read.fail("agent", "must read 'module:attribute'")
        return Source(agent=agent, question=read.text("question"), sha256=sha)
    origin, scenario = read.choice("from", ORIGINS), read.text("scenario")
    if not 0 < len(scenario) <= 1000 or "\x00" in scenario:
        raise read.fail("scenario", "must be a path or a name")
    if origin == "shipped" and not NAME.fullmatch(scenario):
        raise read.fail("scenario", "a shipped scenario is named without a path")
    if origin != "shipped" and (Path(scenario).is_absolute() or not scenario.endswith(".toml") or scenario.startswith(("/", "\\"))):
        raise read.fail("scenario", "must be a relative path to a .toml file")
    overrides = read.table("overrides", "must be a table of scenario fields")
    if extra := sorted(set(overrides) - set(RUN_CHANGES), key=str):
        raise read.fail("overrides", f"may change only what a run changes ({', '.join(RUN_CHANGES)}), not {str(extra[0])[:80]!r}")
    return Source(scenario, origin, sha256=sha, overrides=overrides)


def shown(path: Path, root: Path) -> str:
    """A path as messages name it: relative to the project root when it lies inside it."""
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
