"""The `harness_proxy` fixture: an existing agent's test, recorded once and replayed offline.

    def test_my_agent(harness_proxy):                   # harness_proxy: the proxy's base URL
        agent = build_my_agent(base_url=harness_proxy)
        assert agent.run("What is 7 times 6?") == "42"

One cassette per test beside its file (`folder_name`), in `--harness-proxy MODE`. Drift is
an HTTP error the agent raises; if it swallows it, the test fails with the diff after its
end. A test that fails while recording leaves its cassette as it was.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.errors import HarnessError

_FAILED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness")
    group.addoption("--harness-proxy", metavar="MODE", default="once", help="the harness_proxy fixture's mode: once (the default), new_episodes, all or none")
    group.addoption("--harness-proxy-base-url", metavar="URL", help="the server the harness_proxy fixture records from (default: $HARNESS_BASE_URL)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    report = yield
    if report.when == "call" and report.failed:
        item.stash[_FAILED] = True
    return report


def folder_name(nodeid: str) -> str:
    """A test's cassette folder: its file's name and test id (parameters too), readable, then
    a hash of them, so that no two tests share one, not even on a file system that ignores case."""
    import hashlib

    path, _, test = nodeid.partition("::")
    name = f"{path.rpartition('/')[2]}::{test}"
    shown = "".join(c if c.isascii() and (c.isalnum() or c in "._-[]") else "_" for c in name)
    return f"{shown[:80]}-{hashlib.sha256(name.encode()).hexdigest()[:16]}"


@pytest.fixture
def harness_proxy(request: pytest.FixtureRequest) -> Iterator[str]:
    """The base URL of a proxy that records this test's calls or replays them."""
    from harness.proxy import Proxy, serve  # (only a test that uses it loads the proxy)

    folder = request.path.parent / "cassettes" / folder_name(request.node.nodeid)
    before = folder.with_name("".join(c if c.isalnum() or c in "_.-" else "_" for c in request.node.name)[:100])
    if not folder.exists() and before.is_dir():  # named as harness 0.x named it, before parameters had their own
        pytest.fail(f"harness_proxy: {before} is this test's cassette under its old name; rename it to {folder.name}", pytrace=False)
    try:
        proxy = Proxy(folder, request.config.getoption("harness_proxy"), request.config.getoption("harness_proxy_base_url"))
    except HarnessError as e:  # the options named as pytest names them, and said once (not as an error within an error)
        where = {"--base-url": "--harness-proxy-base-url (or HARNESS_BASE_URL)", "--mode": "--harness-proxy"}.get(e.where, e.where)
        raise pytest.fail.Exception(f"harness_proxy: {where}: {e.message}", pytrace=False) from None
    server = serve(proxy)
    try:
        yield proxy.url
    finally:
        server.shutdown()
        server.server_close()
        failed = request.node.stash.get(_FAILED, False)
        proxy.close(save=not failed)
    if proxy.mismatches and not failed:
        pytest.fail("\n".join(proxy.mismatches), pytrace=False)
