"""The book's pages in reading order, read from ``_toc.yml``: one definition for the scripts, benchmarks and tests.

    python scripts/book_toc.py zh --last-first     # the Chinese edition's notebooks, the last page first
    python scripts/book_toc.py . --last-first --first 07a_making_it_train 14_playground   # those two, then the rest

prints the notebooks of an edition (``.`` the English, ``zh`` the Chinese), for the Makefile's runs of them: the
longest first (``--first``, by name), then the rest last page first, since the later chapters train models and take
longer, so that none of them starts at the end alone while the other worker waits (pytest-xdist hands out files in
the order given, with ``--no-loadscope-reorder``; by default it puts the files with the most tests first).
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
    parser.add_argument(
        "--first",
        nargs="+",
        default=[],
        metavar="NAME",
        help="these pages (file names without a "
        "suffix, e.g. 07a_making_it_train) before the others, in the order given",
    )
    args = parser.parse_args()
    notebooks = [args.root / f"{name}.ipynb" for name in toc_files(args.root)]
    notebooks = [path for path in notebooks if path.is_file()]
    unknown = sorted(set(args.first) - {path.stem for path in notebooks})
    if unknown:
        parser.error(f"--first names no notebook of {args.root}/_toc.yml: {', '.join(unknown)}")
    ordered = list(reversed(notebooks)) if args.last_first else notebooks
    first = [path for name in args.first for path in ordered if path.stem == name]
    print(" ".join(str(path) for path in first + [path for path in ordered if path not in first]))


if __name__ == "__main__":
    main()
