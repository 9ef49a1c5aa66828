"""The book's pages in reading order, read from ``_toc.yml``: one definition for the scripts, benchmarks and tests."""

from __future__ import annotations

from pathlib import Path

import yaml


def toc_files(root: Path) -> list[str]:
    """Every ``file`` of ``root/_toc.yml`` (the root page first, then parts, chapters and sections in order), as written
    there: paths relative to ``root`` without a suffix, e.g. ``"book/01_introduction"``."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(node: dict) -> None:
        for key in ("parts", "chapters", "sections"):
            for entry in node.get(key) or []:
                if "file" in entry:
                    files.append(entry["file"])
                walk(entry)

    walk(toc)
    return [str(Path(f).with_suffix("")) for f in files]
