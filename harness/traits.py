"""Strategy traits: may two actions of one completion run in the same round?

Every tool has a trait, set where the tool is defined and overridable per scenario:

    exploration    fetches data a later step will read (search, read_file, check_quota)
    exploitation   consumes data already visible (write a report, patch a file)
    neutral        neither (a clock, a calculator, finish)
    unknown        nobody said

The second action of a round must not depend on the first's result, which nobody has
seen yet. A neutral action depends on nothing, so it may always follow. An action of
unknown trait might depend on anything, so it may not. Otherwise the second may follow
only a first whose result it cannot be waiting for: an exploitation or neutral one.

The final answer may open only after neutral actions: after anything else the answer
could contradict a result that is still on its way.
"""

from __future__ import annotations

from collections.abc import Iterable


def compatible(first: str, second: str) -> bool:
    if second == "neutral":
        return True
    if second == "unknown":
        return False
    return first in ("exploitation", "neutral")


def answer_may_open(accepted: Iterable[str]) -> bool:
    return all(trait == "neutral" for trait in accepted)
