"""What a command imports before it can answer: start-up is most of a short command's time.

Each command runs in a fresh interpreter, and the modules it imported are listed; no time
is measured here (tests/benchmarks/command.py times start-up).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CLIENTS = ("httpx", "httpcore", "llama_cpp")  # only a live model needs them


def imported(*args: str, entry: str = "harness.__main__:command") -> set[str]:
    """The top-level and harness modules `harness ARGS` has imported when it is done."""
    code = (
        "import contextlib, io, json, sys\n"
        f"from {entry.replace(':', ' import ')} as main\n"
        f"sys.argv = ['harness', *{list(args)!r}]\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "HARNESS_API_KEY": "sk-test"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_help_imports_no_client_no_rich_and_not_the_loop():
    modules = imported("--help")
    assert "harness.cli" in modules
    assert not modules & {*CLIENTS, "rich", "regex", "harness.loop"}


def test_a_scripted_run_imports_no_client_and_no_view_it_does_not_draw():
    for args in (["run", "nimbus"], ["run", "nimbus", "--format", "tagged"]):
        modules = imported(*args)
        assert "harness.loop" in modules
        assert not modules & {*CLIENTS, "harness.backends.messages", "harness.render.frames", "harness.render.html"}, args
    for args in (["run", "nimbus"], ["run", "nimbus", "--format", "tagged"]):  # the default view, to a pipe: plain rows
        assert "rich" not in imported(*args), args


def test_a_fingerprint_is_sha256_small_or_big():
    import hashlib

    from harness.source import fingerprint

    for parts in (["ab", "c", b"\xff"], ["é" * 600_000, "x"]):  # under a megabyte, and over
        data = [p.encode() if isinstance(p, str) else p for p in parts]
        assert fingerprint(parts) == hashlib.sha256(b"".join(b"%d:" % len(d) + d for d in data)).hexdigest()


def test_a_live_run_loads_the_client_but_not_httpxs_own_command_line():
    # httpx imports its command line (click, pygments) whenever click is installed, as it
    # is beside llama.cpp's server; the harness command never uses it.
    modules = imported("run", "nimbus", "--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "-f", "tagged")
    assert "httpx" in modules
    assert not modules & {"click", "pygments", "rich.syntax"}


def test_a_command_imports_its_own_module_and_no_other_commands():
    modules = imported("run", "nimbus", "--format", "tagged")
    assert "harness.cli_run" in modules
    assert not modules & {"harness.cli_replay", "harness.cli_show", "harness.cli_proxy", "harness.cli_batch"}
    assert {"harness.cli_run", "harness.cli_replay", "harness.cli_show", "harness.cli_proxy"} <= imported("--help")
