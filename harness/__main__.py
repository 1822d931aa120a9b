"""`python -m harness` and the `harness` command start here.

Nothing is imported before the guard, so a Ctrl-C at any moment of start-up, even while
the CLI's own modules load, is one line and exit code 130, never a traceback.
"""

import sys


def main() -> None:
    # httpx loads its own command line (click, rich, pygments: ~60 ms) whenever click is
    # installed, which harness never calls; marked missing, httpx's own stub stands in.
    sys.modules.setdefault("httpx._main", None)
    try:
        from harness.cli import main as cli

        cli()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()
