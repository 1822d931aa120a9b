"""A scenario's expected answer: `expect = "303"` (the answer, stripped, is exactly this)
or `expect_regex = '^30[0-9]$'` (found in it, within a time bound: the answer is untrusted).
`matches` is None when the scenario states nothing.
"""

from __future__ import annotations

import regex

from harness.errors import ScenarioError

SEARCH_SECONDS = 1.0  # a pattern that takes longer on one answer counts as a mismatch


def check_pattern(pattern: str, where: str) -> None:
    """A pattern that does not compile is one line naming the field, when the scenario loads."""
    try:
        regex.compile(pattern)
    except regex.error as e:
        raise ScenarioError(where, f"is not a regular expression ({e})") from None


def matches(scenario, answer: str | None) -> bool | None:
    if scenario.expect is None and scenario.expect_regex is None:
        return None
    if answer is None:
        return False
    if scenario.expect is not None and answer.strip() != scenario.expect.strip():
        return False
    if scenario.expect_regex is not None:
        try:
            return regex.search(scenario.expect_regex, answer, timeout=SEARCH_SECONDS) is not None
        except TimeoutError:
            return False
    return True
