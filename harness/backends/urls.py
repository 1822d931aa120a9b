"""Base URLs: checked once, at the start, and shown without their user:password.

    check_base_url("http://[::1/v1")           -> HarnessError("--base-url", "is not a URL ...")
    check_base_url(url, "HARNESS_BASE_URL")    -> the error names the variable the URL came from
    hidden("http://me:hunter2@box:8080/v1")    -> "http://box:8080/v1"

The rule that never leaks a password: if an `@` occurs after the `//` (or anywhere, in a
text without one), everything from the `//` to the *last* `@` is user-info, and no
message ever shows it. RFC 3986 ends the authority at the first `/`, `?` or `#`, so in
`http://user:pa/ss@host/v1` it would read `ss@host/v1` as the path; that is why a base
URL with an `@` after its host is refused (a password's `/ ? # @` are percent-encoded:
`%2F %3F %23 %40`), and why a URL that cannot be parsed at all is quoted nowhere, not
even in part: the message says what to fix without repeating it.

A malformed URL is bad input (exit 2), named by where it came from (a flag, a variable).
A URL with a `?query` or a `#fragment` is refused: the request's path is appended to the
base URL, so a query would end up inside the path (`/v1?key=K/completions`) and a
fragment is never sent at all; and a query often carries a key, which would then be
saved and shown. Neither is ever quoted in a message. user:password is kept: httpx sends
it as Basic auth, and it is scrubbed like the key.
"""

from __future__ import annotations

import base64
from urllib.parse import unquote, urlsplit

from harness.errors import HarnessError

def hidden(text: str) -> str:
    """`text` (a URL, or a message holding one) without its user-info: if an `@` follows
    the first `//` (or the start, when there is no `//`), everything between them and the
    last `@` goes."""
    start = text.find("//")
    start = 0 if start < 0 else start + 2
    at = text.rfind("@")
    return text if at < start else text[:start] + text[at + 1 :]


UNPARSED = "is not a URL that can be read, and is not shown (it may hold a password); write it as http://HOST:PORT/v1"
ENCODE = "percent-encode a `/`, `?`, `#` or `@` in a user name or password (%2F, %3F, %23, %40)"


def check_base_url(url: str, where: str = "--base-url") -> str:
    """`url` if it is an http:// or https:// URL with a host (and a port, if any, of digits),
    and no query or fragment; `where` names where it came from (a flag, a variable)."""
    import httpx

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a port that is not a number raises here)
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL):  # its text may say which part: it is not quoted either
        raise HarnessError(where, f"{UNPARSED}, and {ENCODE}") from None
    shown = _without_query(hidden(url))[:200]
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HarnessError(where, f"{shown!r} is not an http:// or https:// URL with a host")
    if "@" in url[len(f"{parts.scheme}://{parts.netloc}") :]:  # `//user:pa/ss@host`: the password would be the path
        raise HarnessError(where, f"{shown!r} has an `@` after its host; {ENCODE}")
    if "?" in url or "#" in url:  # even an empty one: "/v1?" would become "/v1?/completions"
        what = "a ?query" if "?" in url.split("#")[0] else "a #fragment"
        raise HarnessError(where, f"{shown!r} has {what}; give the server's URL alone, up to its path (a key goes in HARNESS_API_KEY)")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise HarnessError(where, f"{shown!r} holds a space or a control character")
    return url


def check_proxy_url(value: str, name: str) -> None:
    """A proxy variable's value as httpx reads it (`host:port` is http://host:port): a URL
    it can use, or one HarnessError naming the variable."""
    import httpx

    url = value if "://" in value else f"http://{value}"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL):
        raise HarnessError(name, f"{UNPARSED.replace('/v1', '')}, and {ENCODE}") from None
    shown = _without_query(hidden(url))[:200]
    if "@" in url[len(f"{parts.scheme}://{parts.netloc}") :]:
        raise HarnessError(name, f"{shown!r} has an `@` after its host; {ENCODE}")
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https", "socks5", "socks5h") or not parts.hostname:
        raise HarnessError(name, f"{shown!r} is not a proxy URL httpx can use: http://, https:// or socks5://, with a host")
    if scheme.startswith("socks"):
        import importlib.util

        if importlib.util.find_spec("socksio") is None:
            raise HarnessError(name, "a socks5:// proxy needs the socksio package, which is not installed (pip install socksio), or give an http:// proxy")


def _without_query(url: str) -> str:
    """`url` cut at its first `?` or `#`: what follows may be a key, and is never shown."""
    cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
    return url[:cut] + ("…" if cut < len(url) else "")


def url_secrets(url: str) -> list[str]:
    """The user:password of a URL and the password, as written and decoded, and as httpx
    sends them (an `Authorization: Basic` header: base64 of the decoded pair), which a
    server may echo back."""
    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0]
    if not userinfo:
        return []
    password = userinfo.partition(":")[2]
    basic = base64.b64encode(unquote(userinfo).encode("utf-8")).decode("ascii")
    return [s for s in {userinfo, unquote(userinfo), password, unquote(password), basic} if s]

