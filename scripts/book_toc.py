"""The book's pages in reading order, read from ``_toc.yml``: one definition for the scripts, benchmarks and tests.

    python scripts/book_toc.py zh --last-first     # the Chinese edition's notebooks, the last page first

prints the notebooks of an edition (``.`` the English, ``zh`` the Chinese), for the Makefile's runs of them: last page
first, since the later chapters train models and take longest, so that none of them starts at the end alone while
the other worker waits (pytest-xdist hands out files in the order given).
"""

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


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="an edition's notebooks, in reading order or the last page first")
    parser.add_argument("root", type=Path, nargs="?", default=Path("."), help="the edition's folder: . or zh")
    parser.add_argument("--last-first", action="store_true", help="the last page first")
    args = parser.parse_args()
    notebooks = [args.root / f"{name}.ipynb" for name in toc_files(args.root)]
    notebooks = [str(path) for path in notebooks if path.is_file()]
    print(" ".join(reversed(notebooks) if args.last_first else notebooks))


if __name__ == "__main__":
    main()
