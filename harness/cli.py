"""The `harness` command: the app and its one error rule (exit codes: `harness --help`).

Each command lives in a module of its own (cli_run, cli_replay, cli_show, cli_proxy) and
imports what it uses when it runs, so `harness --help` stays fast.
"""

import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from harness.cli_replay import replay
from harness.cli_io import MODEL_FAILED
from harness.cli_proxy import proxy
from harness.cli_run import agent, run
from harness.cli_show import export, list_scenarios, show, step
from harness.errors import HarnessError

__all__ = ["MODEL_FAILED", "app", "main"]


class OneLineErrors(TyperGroup):
    """Every user error, click's or ours, becomes one line on stderr and exit code 2."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        said = ""
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
            sys.stdout.flush()  # here, not at exit: a full disk is one line too
        except (typer.TyperException, HarnessError) as e:  # click's usage errors, and ours (shown, never obeyed)
            from harness.escape import one_line

            code, said = 2, f"error: {one_line(e.format_message() if isinstance(e, typer.TyperException) else str(e))}"
        except UnicodeEncodeError as e:  # PYTHONIOENCODING=ascii, a C locale's terminal
            held = e.object[e.start : e.end]
            if any(0xD800 <= ord(c) <= 0xDFFF for c in held):  # not text in any encoding: a name that is not UTF-8
                code, said = 2, f"error: the output would hold {held!r}, which is not text (a file name that is not UTF-8?)"
            else:
                code, said = 2, f"error: the output cannot hold {held!r} in {e.encoding}; use UTF-8 (PYTHONIOENCODING=utf-8)"
        except OSError as e:  # writing the output failed (a full disk); reading files fails as a HarnessError
            code, said = 2, f"error: writing the output failed: {e.strerror or e}"
        except (typer.Abort, KeyboardInterrupt):
            code, said = 130, "interrupted"
        if said:
            typer.echo(said, err=True)
        code = code if isinstance(code, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code


app = typer.Typer(
    cls=OneLineErrors,
    name="harness",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="A ReAct harness you can see through: one text buffer, every byte tagged with its author.\n\n"
    "Exit codes: 0 done; 1 a check failed (replay --check found a difference, or a batch's --fail-on "
    "matched); 2 bad input (one line on stderr naming the file, field or argument); 3 a live model "
    "failed (model_error: the run is still saved); 130 interrupted (Ctrl-C). Several runs or replays "
    "at once exit with the first of 130, 2, 3, 1 that applies, else 0. Each command's --help says what it takes.",
)


def _version(value: bool) -> None:
    if value:
        from harness import __version__

        typer.echo(f"harness {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())


for command in (run, show, replay, agent, step, export, proxy):
    app.command()(command)
app.command("list")(list_scenarios)


def main() -> None:
    app()
