"""Base URLs: checked once, at the start, and shown without their user:password.

    check_base_url("http://[::1/v1")           -> HarnessError("--base-url", "... is not a URL: ...")
    hidden("http://me:hunter2@box:8080/v1")    -> "http://box:8080/v1"

A malformed URL is bad input (exit 2), named as the user wrote it, except for any
user:password in it, which no message ever shows; even a URL too broken to parse has
everything between `//` and `@` taken out.
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


def check_base_url(url: str) -> str:
    """`url` if it is an http:// or https:// URL with a host (and a port, if any, of digits)."""
    import httpx

    shown = hidden(url)[:200]
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a port that is not a number raises here)
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL) as e:
        raise HarnessError("--base-url", f"{shown!r} is not a URL ({hidden(str(e))[:120]})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HarnessError("--base-url", f"{shown!r} is not an http:// or https:// URL with a host")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise HarnessError("--base-url", f"{shown!r} holds a space or a control character")
    return url


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

