"""Small domain errors. Library code raises these; only the CLI turns them into messages.

Each error carries *where* the problem is (a file, a field, a line, an argument) so that
the one-line message a user sees can name it. `made_of_ctrl_c` tells a Ctrl-C inside any error.
"""

from __future__ import annotations


class HarnessError(Exception):
    """Bad input from the user: a scenario, a saved transcript, a prompt, an argument."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where
        self.message = message


class ScenarioError(HarnessError):
    """A scenario file (transcripts/*.toml) is missing, malformed or has a bad field."""


class TranscriptFormatError(HarnessError):
    """A saved transcript has a bad record or metadata line."""


class TemplateError(HarnessError):
    """A prompt template is missing or uses a variable nobody supplied."""


def made_of_ctrl_c(error: BaseException | None) -> bool:
    """A KeyboardInterrupt, or an error raised from one or while handling one: Python 3.11
    wraps a Ctrl-C that lands in a class's __set_name__ in a RuntimeError, and a library may
    make it an error of its own."""
    for _ in range(100):  # (a chain may loop back on itself)
        if error is None or isinstance(error, KeyboardInterrupt):
            return error is not None
        error = error.__cause__ or error.__context__
    return False
