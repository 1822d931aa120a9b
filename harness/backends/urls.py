"""Base URLs: checked once, at the start, and shown without their user:password.

    check_base_url("http://[::1/v1")           -> HarnessError("--base-url", "... is not a URL: ...")
    check_base_url(url, "HARNESS_BASE_URL")    -> the error names the variable the URL came from
    hidden("http://me:hunter2@box:8080/v1")    -> "http://box:8080/v1"

A malformed URL is bad input (exit 2), named as the user wrote it, except for any
user:password in it, which no message ever shows; even a URL too broken to parse has
everything between `//` and `@` taken out. A URL with a `?query` or a `#fragment` is
refused: the request's path is appended to the base URL, so a query would end up inside
the path (`/v1?key=K/completions`) and a fragment is never sent at all; and a query often
carries a key, which would then be saved and shown. Neither is ever quoted in a message.
user:password is kept: httpx sends it as Basic auth, and it is scrubbed like the key.
"""

from __future__ import annotations

import base64
from urllib.parse import unquote, urlsplit, urlunsplit

import regex

from harness.errors import HarnessError

_USERINFO = regex.compile(r"(?<=//)[^/?#]{0,2000}@")


def hidden(url: str) -> str:
    """`url` without the user:password part."""
    try:
        parts = urlsplit(url)
        return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    except ValueError:
        return _USERINFO.sub("", url)


def check_base_url(url: str, where: str = "--base-url") -> str:
    """`url` if it is an http:// or https:// URL with a host (and a port, if any, of digits),
    and no query or fragment; `where` names where it came from (a flag, a variable)."""
    import httpx

    shown = _without_query(hidden(url))[:200]
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a port that is not a number raises here)
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL) as e:
        raise HarnessError(where, f"{shown!r} is not a URL ({_without_query(hidden(str(e)))[:120]})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HarnessError(where, f"{shown!r} is not an http:// or https:// URL with a host")
    if "?" in url or "#" in url:  # even an empty one: "/v1?" would become "/v1?/completions"
        what = "a ?query" if "?" in url.split("#")[0] else "a #fragment"
        raise HarnessError(where, f"{shown!r} has {what}; give the server's URL alone, up to its path (a key goes in HARNESS_API_KEY)")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise HarnessError(where, f"{shown!r} holds a space or a control character")
    return url


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

