"""The repository's address has one source, _config.yml; the notebooks' install lines and the README follow it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from sync_repository_url import pages_url, repository_url, stale_copies, sync  # noqa: E402


def test_every_copy_of_the_repository_address_agrees_with_config() -> None:
    assert stale_copies(ROOT) == [], "run `make sync-url` after changing repository.url in _config.yml"


@pytest.mark.parametrize(
    ("url", "pages"),
    [
        (
            "https://github.com/transformer-interactive/transformer-interactive",
            "https://transformer-interactive.github.io/transformer-interactive/",
        ),
        ("https://github.com/Someone/Someone.github.io", "https://someone.github.io/"),
    ],
)
def test_pages_address_follows_from_the_repository(url: str, pages: str) -> None:
    assert pages_url(url) == pages


def test_a_new_address_in_config_is_reported_then_copied_everywhere(tmp_path: Path) -> None:
    for name in ("_config.yml", "_toc.yml", "README.md", "book"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, tmp_path / name)
    old, new = repository_url(ROOT), "https://github.com/someone-else/the-book"
    config = tmp_path / "_config.yml"
    config.write_text(config.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")

    stale = stale_copies(tmp_path)
    assert any(s.startswith("README.md") for s in stale) and any(s.startswith("book/07_training.ipynb") for s in stale)

    changed = sync(tmp_path)
    assert stale_copies(tmp_path) == []
    assert {p.name for p in changed} >= {"README.md", "01_introduction.ipynb", "13_cost.ipynb"}
    chapter = (tmp_path / "book" / "01_introduction.ipynb").read_text(encoding="utf-8")
    assert f"git+{new}" in chapter and old not in chapter
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "https://someone-else.github.io/the-book/" in readme and old not in readme
    assert sync(tmp_path) == []  # a second run changes nothing
