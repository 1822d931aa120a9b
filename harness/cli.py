"""The `harness` command: the app and its one error rule (exit codes: `harness --help`).

Each command lives in a module of its own (cli_run, cli_replay, cli_show, cli_proxy),
imported only when that command is asked for, and imports what it uses when it runs.
"""

import sys
from importlib import import_module
from typing import Annotated, Any

import typer
from typer.core import TyperGroup
from typer.main import CommandInfo, get_command_from_info

from harness.errors import HarnessError, made_of_ctrl_c

WHERE = {  # each command, in the order --help lists them, and the function that is it
    "run": "harness.cli_run:run",
    "show": "harness.cli_show:show",
    "replay": "harness.cli_replay:replay",
    "agent": "harness.cli_run:agent",
    "step": "harness.cli_show:step",
    "export": "harness.cli_show:export",
    "proxy": "harness.cli_proxy:proxy",
    "list": "harness.cli_show:list_scenarios",
}


class OneLineErrors(TyperGroup):
    """Every user error, click's or ours, becomes one line on stderr and exit code 2."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = dict.fromkeys(WHERE)  # each built by get_command when first asked for

    def get_command(self, ctx: typer.Context, name: str) -> Any:
        """A command, imported and built only when it is asked for: `harness run` never
        loads replay's module nor reads the other commands' options."""
        if name in WHERE and self.commands[name] is None:
            module, function = WHERE[name].split(":")
            info = CommandInfo(name, callback=getattr(import_module(module), function))
            self.commands[name] = get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=None)
        return self.commands.get(name)

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BaseException as e:  # a Ctrl-C (typer would end it as 130 in silence), or an error made of one
            if made_of_ctrl_c(e):
                raise typer.Abort() from None
            raise

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
    "failed (model_error: the run is still saved, though never over a saved run); 130 interrupted (Ctrl-C). Several runs or replays "
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
