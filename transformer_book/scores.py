"""Scores of machine translation, as the dates and translation chapters report them: BLEU and chrF from sacrebleu,
and exact match."""

from __future__ import annotations

from collections.abc import Sequence

import sacrebleu


def translation_scores(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """``{"exact match", "BLEU", "chrF"}`` of ``hypotheses`` against one reference each: the share of hypotheses
    equal to their reference (0 to 1), and corpus BLEU and chrF with sacrebleu's defaults (0 to 100; Papineni et
    al., 2002; Popović, 2015; Post, 2018), whose n-gram counts are summed over all the sentences first."""
    if isinstance(hypotheses, str) or isinstance(references, str):
        raise TypeError("hypotheses and references must be sequences of strings, not one string (wrap it in a list)")
    if len(hypotheses) != len(references) or not len(references):
        raise ValueError(f"hypotheses and references must be non-empty and as long as each other; got "
                         f"{len(hypotheses)} and {len(references)}")
    hypotheses, references = list(hypotheses), list(references)
    return {
        "exact match": sum(h == r for h, r in zip(hypotheses, references, strict=True)) / len(references),
        "BLEU": sacrebleu.corpus_bleu(hypotheses, [references]).score,
        "chrF": sacrebleu.corpus_chrf(hypotheses, [references]).score,
    }
