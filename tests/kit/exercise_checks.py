"""What the tests of the exercises' graders share (tests/kit/test_exercises_*.py): a wrong answer is refused with
a message that names its mistake, in English and in Chinese, every word of the message translated."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from transformer_book import i18n

CHINESE = re.compile(r"[\u4e00-\u9fff]")


@contextmanager
def strictly_in(language: str) -> Iterator[None]:
    """Run in ``language``, a template without its translation an error (as the book's runs of the Chinese chapters
    are)."""
    before, strict = i18n._language, os.environ.get(i18n.STRICT_ENV)
    i18n.set_language(language)
    os.environ[i18n.STRICT_ENV] = "1"
    try:
        yield
    finally:
        i18n._language = before
        if strict is None:
            del os.environ[i18n.STRICT_ENV]
        else:
            os.environ[i18n.STRICT_ENV] = strict


def refused(grade: Callable[..., None], answer: Callable, message: str, *args: object) -> None:
    """``grade(answer, *args)`` raises ``AssertionError`` whose English matches ``message`` and whose Chinese is
    Chinese: every template of it has its translation."""
    with strictly_in("en"), pytest.raises(AssertionError, match=message):
        grade(answer, *args)
    with strictly_in("zh"), pytest.raises(AssertionError) as chinese:
        grade(answer, *args)
    assert CHINESE.search(str(chinese.value)), str(chinese.value)


def accepted(grade: Callable[..., None], answer: Callable, *args: object) -> None:
    """``grade(answer, *args)`` passes."""
    with strictly_in("en"):
        grade(answer, *args)
