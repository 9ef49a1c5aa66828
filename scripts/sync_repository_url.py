"""Make every copy of the repository's address follow the one in ``_config.yml`` (``repository.url``).

    python scripts/sync_repository_url.py           # rewrite the copies (make sync-url)
    python scripts/sync_repository_url.py --check   # list the copies that disagree, exit 1 if any

Jupyter Book derives the launch and repository buttons from ``repository.url`` itself. The copies this script keeps
in step are the install line of each chapter's first code cell (``... @ git+<url>``, what Colab installs), in both
editions, the Chinese edition's ``zh/_config.yml`` and, in the README, that same install address and the book's
address on GitHub Pages (``https://<owner>.github.io/<name>/``). Only those lines are touched; notebooks are written
back in the repository's JSON format.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from book_toc import toc_files  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
INSTALL = re.compile(r"(?<=git\+)https://github\.com/[\w.-]+/[\w.-]+?(?=[\"'\s@#]|$)")  # the address after git+
PAGES = re.compile(r"https://[\w-]+\.github\.io/(?:[\w.-]+/)?")


def repository_url(root: Path = ROOT) -> str:
    """``repository.url`` of ``root/_config.yml``: ``https://github.com/<owner>/<name>``."""
    url = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))["repository"]["url"].rstrip("/")
    if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url):
        raise ValueError(f"_config.yml: repository.url must be https://github.com/<owner>/<name>; got {url!r}")
    return url


def pages_url(url: str) -> str:
    """Where GitHub Pages serves the book of repository ``url``: ``https://<owner>.github.io/<name>/`` (the bare
    ``https://<owner>.github.io/`` for the repository named ``<owner>.github.io``)."""
    owner, name = url.split("/")[-2:]
    site = f"https://{owner.lower()}.github.io/"
    return site if name.lower() == f"{owner.lower()}.github.io" else f"{site}{name}/"


def _notebooks(root: Path) -> list[Path]:
    """The chapters of both editions (the English book's and the Chinese one's, ``zh/``)."""
    books = [root] + ([root / "zh"] if (root / "zh" / "_toc.yml").is_file() else [])
    return [book / f"{file}.ipynb" for book in books for file in toc_files(book) if (book / f"{file}.ipynb").exists()]


CONFIG_URL = re.compile(r"^(  url: )(\S+)", re.M)  # repository.url's line in a _config.yml


def _rewrite_chinese_config(text: str, url: str) -> tuple[list[str], str]:
    """The addresses on ``text``'s ``url:`` line, and ``text`` with ``url`` there."""
    return [address for _, address in CONFIG_URL.findall(text)], CONFIG_URL.sub(rf"\g<1>{url}", text)


def _rewrite_notebook(path: Path, url: str) -> tuple[list[str], str | None]:
    """The addresses in the install line of ``path``'s first code cell, and the notebook's new JSON text (None when
    nothing changes)."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cell = next(c for c in notebook["cells"] if c["cell_type"] == "code")
    source = cell["source"] if isinstance(cell["source"], list) else cell["source"].splitlines(keepends=True)
    found = [address for line in source for address in INSTALL.findall(line)]
    new = [INSTALL.sub(url, line) for line in source]
    if new == source:
        return found, None
    cell["source"] = new
    return found, json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def _rewrite_readme(text: str, url: str) -> tuple[list[str], str]:
    found = INSTALL.findall(text) + PAGES.findall(text)
    return found, PAGES.sub(pages_url(url), INSTALL.sub(url, text))


def stale_copies(root: Path = ROOT) -> list[str]:
    """``"<file>: <address>"`` for every copy of the address that disagrees with ``_config.yml``, and for every
    chapter whose install line holds no address at all."""
    url = repository_url(root)
    stale = []
    for path in _notebooks(root):
        found, _ = _rewrite_notebook(path, url)
        stale += [f"{path.relative_to(root)}: {a}" for a in found if a != url] or (
            [] if found else [f"{path.relative_to(root)}: no install line in the first code cell"]
        )
    chinese = root / "zh" / "_config.yml"
    if chinese.is_file():
        found, _ = _rewrite_chinese_config(chinese.read_text(encoding="utf-8"), url)
        stale += [f"zh/_config.yml: {a}" for a in found if a != url]
    found, _ = _rewrite_readme((root / "README.md").read_text(encoding="utf-8"), url)
    stale += [f"README.md: {a}" for a in found if a not in (url, pages_url(url))]
    if pages_url(url) not in found:
        stale.append(f"README.md: the book's address {pages_url(url)} is missing")
    return stale


def sync(root: Path = ROOT) -> list[Path]:
    """Rewrite every copy of the address from ``_config.yml``; returns the files changed."""
    url, changed = repository_url(root), []
    for path in _notebooks(root):
        _, text = _rewrite_notebook(path, url)
        if text is not None:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    chinese = root / "zh" / "_config.yml"
    if chinese.is_file():
        old = chinese.read_text(encoding="utf-8")
        _, new = _rewrite_chinese_config(old, url)
        if new != old:
            chinese.write_text(new, encoding="utf-8")
            changed.append(chinese)
    readme = root / "README.md"
    old = readme.read_text(encoding="utf-8")
    _, new = _rewrite_readme(old, url)
    if new != old:
        readme.write_text(new, encoding="utf-8")
        changed.append(readme)
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only list the copies that disagree; exit 1 if any")
    args = parser.parse_args()
    if args.check:
        stale = stale_copies()
        print("\n".join(stale) or f"every copy says {repository_url()}")
        return 1 if stale else 0
    for path in sync():
        print(f"rewrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
