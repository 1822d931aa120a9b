"""How to install more of harness: the one place that writes an install command.

The distribution is `harness-react` (`harness` on the registry is another project). A hint
installs *this* copy with this Python's pip: an editable checkout by its folder, else the
distribution by name.
"""

from __future__ import annotations

import json
import shlex
import sys
from importlib import metadata
from urllib.parse import unquote, urlparse

DISTRIBUTION = "harness-react"


def pip(*args: str) -> str:
    """A pip command for the Python that runs harness."""
    return shlex.join([sys.executable, "-m", "pip", "install", *args])


def _folder() -> tuple[str, bool] | None:
    """The folder this distribution was installed from, and whether editably (`pip install -e .`);
    None if it came from the registry, a wheel file or a repository (PEP 610's direct_url.json)."""
    try:
        found = json.loads(metadata.distribution(DISTRIBUTION).read_text("direct_url.json") or "{}")
    except (metadata.PackageNotFoundError, ValueError):
        return None
    url = urlparse(found.get("url", "") if isinstance(found, dict) else "")
    if url.scheme != "file" or not isinstance(found.get("dir_info"), dict):
        return None
    return unquote(url.path), found["dir_info"].get("editable") is True


def extra(name: str) -> str:
    """The command that adds the extra `name` to this installation of harness."""
    folder = _folder()
    if folder is None:
        return pip(f"{DISTRIBUTION}[{name}]")
    path, editable = folder
    return pip(*(["-e"] if editable else []), f"{path}[{name}]")
