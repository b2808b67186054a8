"""Every claim quotes its source sentence word for word: the check the claims job runs before it judges.

A paper's source texts are small files that ship with the project (`sources/<paper>.txt`: each quoted
paper's title line and abstract, with its arXiv id), so the check runs on any machine. A quote that is
not found stops the job, naming the claim and showing the whole quote with the first word that differs
from the sources marked, and what the source reads there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

MARK = ">>{}<<"  # how the first differing word of a quote is shown


class QuoteError(ValueError):
    """A claim's quote is not in its paper's source texts (or a source file is missing)."""


def squash(text: str) -> str:
    """`text` with every run of whitespace made one space (line breaks in a file or a quote do not count)."""
    return re.sub(r"\s+", " ", text).strip()


def source_text(paths: Iterable[str | Path]) -> str:
    """The source files' text, squashed and joined; QuoteError naming a file that does not exist."""
    texts = []
    for path in paths:
        if not Path(path).is_file():
            raise QuoteError(f"source text {path} does not exist; fix: write it (the title line and abstract "
                             "of each paper the claims quote, copied verbatim, with its arXiv id), or point "
                             "Paper(sources=...) at the file that holds them")
        texts.append(Path(path).read_text(encoding="utf-8", errors="replace"))
    return squash(" ".join(texts))


def matched_words(quote: str, text: str) -> int:
    """How many of the quote's first words appear, in order and together, in `text`."""
    words, lo, hi = quote.split(), 0, len(quote.split())
    while lo < hi:  # the longest prefix found: a prefix found means every shorter one is found too
        mid = (lo + hi + 1) // 2
        if " ".join(words[:mid]) in text:
            lo = mid
        else:
            hi = mid - 1
    return lo


def quote_problem(quote: str, text: str) -> str | None:
    """None when `quote` (squashed) stands verbatim in `text` and is a whole sentence; else what is wrong,
    with the whole quote and its first differing word marked."""
    quote = squash(quote)
    if not quote.endswith((".", "!", "?")):
        return f"the quote is not a whole sentence (it must end in '.', '!' or '?'): \"{quote}\""
    words = quote.split()
    k = matched_words(quote, text)
    if k == len(words):
        return None
    marked = " ".join(words[:k] + [MARK.format(words[k])] + words[k + 1:])
    if k == 0:
        return f"no sentence of the sources starts like it: \"{marked}\""
    at = text.index(" ".join(words[:k])) + len(" ".join(words[:k]))
    reads = " ".join(text[at:].split()[:6])
    return f"its first differing word is marked: \"{marked}\"; the source reads there: \"... {reads} ...\""


def quote_errors(claims: Iterable, paths: Iterable[str | Path]) -> list[str]:
    """One line per claim whose `source.quote` is not a verbatim sentence of the files `paths`."""
    paths = list(paths)
    text = source_text(paths)
    errors = []
    for claim in claims:
        if claim.source is None:
            errors.append(f"claim {claim.id} quotes no source; fix: "
                          "Claim(..., source=Source(quote, where=...))")
            continue
        problem = quote_problem(claim.source.quote, text)
        if problem:
            errors.append(f"claim {claim.id}: quote not found verbatim in {', '.join(map(str, paths))}: "
                          f"{problem}; fix: copy the sentence word for word from the source")
    return errors


def check_quotes(claims: Iterable, paths: Iterable[str | Path], paper: str) -> None:
    """Raise QuoteError listing every misquoted claim of `paper` (the claims job publishes nothing then)."""
    errors = quote_errors(claims, paths)
    if errors:
        raise QuoteError(f"paper {paper!r}: " + "\n  ".join(errors))
