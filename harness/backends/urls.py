"""Base URLs and proxy URLs: checked once, at the start, and never shown with a password.

Everything from the `//` to the *last* `@` is user-info, which no message shows (`hidden`);
a URL with an `@` after its host, a `?query` or `#fragment`, or that cannot be parsed is
refused, quoting none of it. user:password is sent as Basic auth, and scrubbed like the key.
"""

from __future__ import annotations

import base64
import os
import re
from urllib.parse import SplitResult, unquote, urlsplit

from harness.errors import HarnessError


def hidden(text: str) -> str:
    """`text` without its user-info: from the first `//` (or the start) to the last `@` after it."""
    start = text.find("//")
    start = 0 if start < 0 else start + 2
    at = text.rfind("@")
    return text if at < start else text[:start] + text[at + 1 :]


UNPARSED = "is not a URL that can be read, and is not shown (it may hold a password); write it as http://HOST:PORT"
ENCODE = "percent-encode a `/`, `?`, `#` or `@` in a user name or password (%2F, %3F, %23, %40)"


def check_base_url(url: str, where: str = "--base-url") -> str:
    """`url`, if it is an http(s):// URL with a host and no query or fragment; `where` names its origin."""
    parts, shown = _parsed(url, where, "/v1")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HarnessError(where, f"{shown!r} is not an http:// or https:// URL with a host")
    if "?" in url or "#" in url:  # even an empty one: "/v1?" would become "/v1?/completions"
        what = "a ?query" if "?" in url.split("#")[0] else "a #fragment"
        raise HarnessError(where, f"{shown!r} has {what}; give the server's URL alone, up to its path (a key goes in HARNESS_API_KEY)")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise HarnessError(where, f"{shown!r} holds a space or a control character")
    return url


def server_url(given: str | None, default: str = "") -> str:
    """The server's URL: `given` (--base-url), else $HARNESS_BASE_URL, else `default` (or "");
    checked, a bad one named by where it came from."""
    env = os.environ.get("HARNESS_BASE_URL")
    where = "--base-url" if given else "HARNESS_BASE_URL" if env else "the default base URL"
    url = given or env or default
    return check_base_url(url.rstrip("/"), where) if url else ""


def check_proxy_url(value: str, name: str) -> None:
    """A proxy variable's value as httpx reads it (`host:port` is http://), or a HarnessError naming it."""
    parts, shown = _parsed(value if "://" in value else f"http://{value}", name)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https", "socks5", "socks5h") or not parts.hostname:
        raise HarnessError(name, f"{shown!r} is not a proxy URL httpx can use: http://, https:// or socks5://, with a host")
    if scheme.startswith("socks"):
        import importlib.util

        if importlib.util.find_spec("socksio") is None:
            raise HarnessError(name, "a socks5:// proxy needs the socksio package, which is not installed (pip install socksio), or give an http:// proxy")


def _parsed(url: str, where: str, path: str = "") -> tuple[SplitResult, str]:
    """`url` split, and as a message may show it; refused if it cannot be parsed or has an `@` after its host."""
    import httpx

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a port that is not a number raises here)
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL):
        raise HarnessError(where, f"{UNPARSED}{path}, and {ENCODE}") from None
    shown = re.sub(r"[?#].*", "…", hidden(url), flags=re.S)[:200]  # what follows a `?` or `#` may be a key: never shown
    if "@" in url[len(f"{parts.scheme}://{parts.netloc}") :]:  # `//user:pa/ss@host`: the password would be the path
        raise HarnessError(where, f"{shown!r} has an `@` after its host; {ENCODE}")
    return parts, shown


def url_secrets(url: str) -> list[str]:
    """A URL's user:password and password, as written, decoded and as Basic auth sends them."""
    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0]
    if not userinfo:
        return []
    password = userinfo.partition(":")[2]
    basic = base64.b64encode(unquote(userinfo).encode("utf-8")).decode("ascii")
    return [s for s in {userinfo, unquote(userinfo), password, unquote(password), basic} if s]

