"""Turning a trained model into outputs: greedy decoding (with or without a key/value cache), sampling and beam search.

At inference time there is no target to shift right: the decoder starts from ``BOS`` alone, predicts one token,
appends it to its own input, and repeats until it says ``EOS``. The source is encoded once. Without a cache, each
step runs the decoder over the whole prefix again (step t costs t positions); with a
:class:`~transformer.model.DecoderCache` each decoder layer keeps the keys and values of the positions it has
already seen (and the projected encoder memory), so step t feeds only the newest token.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from .checks import check_int, check_length, check_real, check_token_id, input_checks
from .masks import causal_mask
from .model import DecoderCache, Transformer
from .tokens import BOS_ID, EOS_ID
from .utils import eval_mode


@dataclass
class GreedyStep:
    """What one greedy step saw and chose, for every row of the batch."""

    decoder_input: Tensor  # (B, t): BOS and the tokens chosen so far
    log_probs: Tensor  # (B, V): log-probabilities of the next token
    next_tokens: Tensor  # (B,): the argmax, or the ids ``choose`` picked (PAD for rows that had already finished)
    finished: Tensor  # (B,) bool: the row has produced EOS


def _next_log_probs(
    model: Transformer, tokens: Tensor, memory: Tensor, src_mask: Tensor, cache: DecoderCache | None, bias: Tensor
) -> Tensor:
    """Log-probabilities of the token after ``tokens (B, t)``: ``(B, V)``. With a cache, feed only the newest one.

    ``bias (V,)`` (from :func:`_output_bias`) gives PAD and BOS probability 0; the rest is renormalised.
    """
    if cache is not None:
        hidden = model.decode(tokens[:, -1:], memory, src_mask, cache=cache)  # (B, 1, d_model)
    else:
        causal = causal_mask(tokens.size(1), device=tokens.device)  # (1, 1, t, t)
        hidden = model.decode(tokens, memory, src_mask, causal)  # (B, t, d_model): the whole prefix again
    logits = model.lm_head(hidden[:, -1]).float() + bias  # (B, V)
    return F.log_softmax(logits, dim=-1)  # (B, V)


def _output_bias(model: Transformer, bos_id: int, device: torch.device) -> Tensor:
    """``(V,)`` added to every step's logits: ``-inf`` for PAD and BOS, which are never valid outputs, 0 elsewhere."""
    bias = torch.zeros(model.config.tgt_vocab_size, device=device)
    bias[[model.config.pad_id, bos_id]] = -math.inf
    return bias


def greedy_steps(
    model: Transformer,
    src: Tensor,
    max_new_tokens: int,
    use_cache: bool = True,
    src_mask: Tensor | None = None,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
    choose: Callable[[Tensor], Tensor] | None = None,
) -> Iterator[GreedyStep]:
    """Greedy decoding one step at a time (a generator), for inspecting or drawing it. :func:`greedy_decode` runs it.
    ``choose`` maps the ``(B, V)`` log-probabilities to the ``(B,)`` next ids instead of the argmax (sampling does).

    The model runs on its own device (``src`` and ``src_mask`` are moved there); every step comes back on ``src``'s
    device, so a source made on the CPU is decoded on the model's GPU and inspected on the CPU.
    """
    _check_arguments(model, max_new_tokens, bos_id, eos_id)
    home = src.device  # where the steps go back
    src, src_mask = _on_model_device(model, src, src_mask)
    pad_id = model.config.pad_id
    with eval_mode(model):  # held until the last step is taken; gradients are switched off step by step
        with torch.no_grad():
            memory, src_mask = model.encode(src, src_mask)  # (B, S, d_model), (B, 1, 1|T, S); once
        cache = model.new_cache(capacity=max_new_tokens) if use_cache else None
        bias = _output_bias(model, bos_id, src.device)  # (V,)
        tokens = torch.full(
            (src.size(0), max_new_tokens + 1), pad_id, dtype=torch.long, device=src.device
        )  # (B, 1 + N)
        tokens[:, 0] = bos_id  # the decoder input: BOS, then the tokens chosen so far
        finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)  # (B,)
        for t in range(max_new_tokens):
            # The first step checks every input; later ones only add chosen ids, valid by construction.
            with torch.no_grad(), input_checks(enabled=t == 0):
                log_probs = _next_log_probs(model, tokens[:, : t + 1], memory, src_mask, cache, bias)  # (B, V)
            next_tokens = (log_probs.argmax(dim=-1) if choose is None else choose(log_probs)).masked_fill(
                finished, pad_id
            )
            done = finished | (next_tokens == eos_id)  # (B,)
            yield GreedyStep(*(x.to(home) for x in (tokens[:, : t + 1], log_probs, next_tokens, done)))
            tokens[:, t + 1], finished = next_tokens, done
            if finished.all():
                break


def _on_model_device(model: Transformer, src: Tensor, src_mask: Tensor | None) -> tuple[Tensor, Tensor | None]:
    """``src`` and ``src_mask`` moved to where ``model``'s weights are (no copy when they are there already)."""
    device = next(model.parameters()).device
    return src.to(device), None if src_mask is None else src_mask.to(device)


def greedy_decode(
    model: Transformer,
    src: Tensor,
    max_new_tokens: int,
    use_cache: bool = True,
    src_mask: Tensor | None = None,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
) -> Tensor:
    """Decode a batch greedily: at each step take the most probable next token.

    ``src (B, S)`` -> ``(B, L)`` long, ``L <= max_new_tokens``: the generated ids after BOS, each row ending with its
    EOS and padded with PAD after it (a row that never says EOS runs to ``max_new_tokens``). Cached and uncached decoding give
    the same tokens; the cache only saves work. The model decodes on its own device; the tokens come back on
    ``src``'s device.
    """
    steps = greedy_steps(model, src, max_new_tokens, use_cache, src_mask, bos_id, eos_id)
    return torch.stack([step.next_tokens for step in steps], dim=1)  # (B, L), on src's device


def sample_decode(
    model: Transformer,
    src: Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    rng: torch.Generator | None = None,
    use_cache: bool = True,
    src_mask: Tensor | None = None,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
) -> Tensor:
    """Decode a batch by sampling: at each step draw the next token with :func:`sample_next` (the model's logits
    divided by ``temperature``, among the ``top_k`` most probable tokens only if given, ties with the k-th kept),
    from ``rng`` if given. Returns ``(B, L)`` as
    :func:`greedy_decode` does."""
    check_sampling(temperature, top_k, rng, model.config.tgt_vocab_size)  # up front, not after the source is encoded

    def draw(log_probs: Tensor) -> Tensor:  # (B, V) -> (B,)
        return sample_next(log_probs, temperature, top_k, rng)

    steps = greedy_steps(model, src, max_new_tokens, use_cache, src_mask, bos_id, eos_id, choose=draw)
    return torch.stack([step.next_tokens for step in steps], dim=1)  # (B, L), on src's device


def check_sampling(temperature: float, top_k: int | None, rng: torch.Generator | None, vocab_size: int) -> None:
    """Raise a clear error unless :func:`sample_next` can sample with these settings from ``vocab_size`` tokens."""
    check_real("temperature", temperature)
    if not 0 < temperature < math.inf:
        raise ValueError(f"temperature must be a positive finite number; got {temperature}")
    if top_k is not None:
        check_int("top_k", top_k, minimum=1, maximum=vocab_size)
    if rng is not None and not isinstance(rng, torch.Generator):
        raise TypeError(f"rng must be a torch.Generator or None; got {type(rng).__name__}")


def sampling_probs(scores: Tensor, temperature: float = 1.0, top_k: int | None = None) -> Tensor:
    """The distribution :func:`sample_next` draws from, ``(B, V)``: ``softmax(scores / temperature)`` (below 1
    sharper, above 1 flatter) over the tokens whose score is at least the ``top_k``-th largest if ``top_k`` is given
    (ties with the k-th kept), the others 0. ``scores (B, V)``: logits or log-probabilities (the same distribution)."""
    check_sampling(temperature, top_k, None, scores.size(-1))
    logits = scores.float() / temperature  # (B, V)
    if top_k is not None:
        logits = logits.masked_fill(logits < logits.topk(top_k, dim=-1).values[:, -1:], -math.inf)  # (B, V)
    return logits.softmax(dim=-1)  # (B, V)


def sample_next(
    scores: Tensor, temperature: float = 1.0, top_k: int | None = None, rng: torch.Generator | None = None
) -> Tensor:
    """Draw one next token per row of ``scores (B, V)`` from :func:`sampling_probs` (so ``top_k=1`` is the argmax,
    unless tied). ``rng``, a ``torch.Generator`` on any device, makes the draws repeatable (the global generator is
    used without it). Returns ``(B,)`` ids on ``scores``' device."""
    check_sampling(temperature, top_k, rng, scores.size(-1))
    probs = sampling_probs(scores, temperature, top_k)  # (B, V)
    probs = probs.to(probs.device if rng is None else rng.device)
    return torch.multinomial(probs, 1, generator=rng).squeeze(1).to(scores.device)  # (B,)


@dataclass
class BeamStep:
    """The state of a beam search after one step, for every source: the ``K`` live hypotheses, which may still grow,
    and the ``K`` best finished ones (ended by EOS, or cut at ``max_new_tokens``), both best first."""

    tokens: Tensor  # (B, K, t): the live hypotheses' tokens after BOS
    scores: Tensor  # (B, K): their summed log-probabilities (-inf: no hypothesis in that slot)
    parents: Tensor  # (B, K): the live hypothesis of the step before that each one extends
    finished: Tensor  # (B, K, max_new_tokens): finished hypotheses, EOS included, padded with PAD
    finished_scores: Tensor  # (B, K): their summed log-probabilities divided by length_penalty_factor


def length_penalty_factor(lengths: Tensor | int | list[int], alpha: float) -> Tensor:
    """GNMT's length normalisation ``((5 + |Y|) / 6) ** alpha`` (Wu et al., 2016), used by the paper with alpha 0.6.
    Summed log-probabilities only fall as a hypothesis grows: dividing by it (1 for alpha 0) evens that out."""
    return ((5.0 + torch.as_tensor(lengths).float()) / 6.0) ** alpha


def _keep_best(finished: Tensor, scores: Tensor, new: Tensor, new_scores: Tensor) -> tuple[Tensor, Tensor]:
    """The ``K`` best of the finished hypotheses ``(B, K, N)`` and new ones ``(B, K', N)`` by score, best first."""
    scores, best = torch.cat([scores, new_scores], dim=1).topk(scores.size(1), dim=1)  # (B, K) each
    pool = torch.cat([finished, new], dim=1)  # (B, K + K', N)
    return pool.gather(1, best[..., None].expand(-1, -1, pool.size(2))), scores


def beam_steps(
    model: Transformer,
    src: Tensor,
    beam_size: int,
    max_new_tokens: int,
    length_penalty: float = 0.6,
    use_cache: bool = True,
    src_mask: Tensor | None = None,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
    finished_in_beam: bool = False,
) -> Iterator[BeamStep]:
    """Beam search one step at a time (a generator), batched over sources; :func:`beam_search` runs it.

    As tensor2tensor (the paper's code) does it in outline: every live hypothesis is extended by every token; an
    extension by EOS joins the finished list, ranked by its length-penalised score (the ``beam_size`` best kept); the
    others compete for the live slots on their summed log-probability. It stops when the best finished score beats
    what the best live one could still reach (tensor2tensor from 1.12; before, on the lowest finished score), or after
    ``max_new_tokens``, where the live ones are ranked with the finished by penalised score. Every tensor2tensor
    version differs in two details: its ``grow_topk`` takes EOS only among the ``2 * beam_size`` best extensions, and
    it returns live hypotheses (with raw scores) only where none finished. No coverage penalty (Wu et al.).
    ``finished_in_beam=True`` is the simpler search of many tutorials, kept to show the difference: a finished
    hypothesis holds its slot, grown by PAD at no cost, and the penalty only reranks the beams left at the end.
    """
    _check_arguments(model, max_new_tokens, bos_id, eos_id)
    check_int("beam_size", beam_size, minimum=1)
    check_real("length_penalty", length_penalty)
    home = src.device
    src, src_mask = _on_model_device(model, src, src_mask)
    K, N, pad_id = beam_size, max_new_tokens, model.config.pad_id  # the short names of the formulas below
    with eval_mode(model), torch.no_grad():
        memory, src_mask = model.encode(src, src_mask)  # (B, S, d_model), (B, 1, 1|T, S)
        B, device = src.size(0), src.device
        memory = memory.repeat_interleave(K, dim=0)  # (B * K, S, d_model): one copy per beam
        src_mask = src_mask.expand(B, *src_mask.shape[1:]).repeat_interleave(K, dim=0)  # (B * K, 1, 1|T, S)
        cache = model.new_cache(capacity=N) if use_cache else None
        bias = _output_bias(model, bos_id, device)  # (V,)
        tokens = torch.full((B * K, 1), bos_id, dtype=torch.long, device=device)  # (B * K, 1 + t): live hypotheses
        scores = torch.full((B, K), -math.inf, device=device)  # (B, K)
        scores[:, 0] = 0.0  # one live hypothesis to start with, so the first step does not pick K copies of it
        finished = torch.full((B, K, N), pad_id, dtype=torch.long, device=device)  # (B, K, N)
        finished_scores = torch.full((B, K), -math.inf, device=device)  # (B, K)
        best_possible = length_penalty_factor([1, N], length_penalty).max()  # the largest divisor
        for t in range(N):
            with input_checks(enabled=t == 0):  # as in greedy_steps: later steps only add ids chosen by topk
                log_probs = _next_log_probs(model, tokens, memory, src_mask, cache, bias)  # (B * K, V)
            V = log_probs.size(-1)
            if finished_in_beam:  # a finished hypothesis may only grow by PAD, at no cost
                ended = (tokens[:, -1] == eos_id) | (tokens[:, -1] == pad_id)  # (B * K,)
                log_probs[ended] = -math.inf
                log_probs[ended, pad_id] = 0.0
            else:  # extensions by EOS leave the beam for the finished list
                ending = (scores + log_probs[:, eos_id].view(B, K)) / length_penalty_factor(t + 1, length_penalty)
                done = F.pad(tokens[:, 1:], (0, N - t), value=pad_id)  # (B * K, N): each hypothesis, then its EOS
                done[:, t] = eos_id
                finished, finished_scores = _keep_best(finished, finished_scores, done.view(B, K, N), ending)
                log_probs[:, eos_id] = -math.inf
            candidates = (scores.view(B * K, 1) + log_probs).view(B, K * V)  # (B, K * V)
            scores, index = candidates.topk(K, dim=1)  # (B, K) each
            parent, token = index // V, index % V  # (B, K) each
            rows = (torch.arange(B, device=device)[:, None] * K + parent).view(-1)  # (B * K,)
            tokens = torch.cat([tokens[rows], token.view(-1, 1)], dim=1)  # (B * K, t + 2)
            if cache is not None:
                cache.reorder(rows)
            if t == N - 1:  # out of steps: the live hypotheses end here, as they are
                lengths = (tokens[:, 1:] != pad_id).sum(1).view(B, K)  # PAD not counted (finished_in_beam)
                live = scores / length_penalty_factor(lengths, length_penalty)  # (B, K)
                finished, finished_scores = _keep_best(finished, finished_scores, tokens[:, 1:].view(B, K, N), live)
            yield BeamStep(
                *(x.to(home) for x in (tokens[:, 1:].view(B, K, -1), scores, parent, finished, finished_scores))
            )
            if (finished_scores[:, 0] > scores[:, 0] / best_possible).all():
                break  # no live hypothesis can beat the best finished one any more


def beam_search(
    model: Transformer,
    src: Tensor,
    beam_size: int,
    max_new_tokens: int,
    length_penalty: float = 0.6,
    use_cache: bool = True,
    src_mask: Tensor | None = None,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
    finished_in_beam: bool = False,
) -> tuple[Tensor, Tensor]:
    """Keep the ``beam_size`` most probable partial outputs per source instead of one (:func:`beam_steps`).
    Returns ``(tokens (B, L), scores (B,))``: the best finished hypothesis per source in the format of
    :func:`greedy_decode`, and its summed log-probability divided by :func:`length_penalty_factor`. The model decodes
    on its own device; tokens and scores come back on ``src``'s."""
    *_, last = beam_steps(
        model, src, beam_size, max_new_tokens, length_penalty, use_cache, src_mask, bos_id, eos_id, finished_in_beam
    )
    best = last.finished[:, 0]  # (B, N): the best finished hypothesis of each source
    return best[:, : int((best != model.config.pad_id).sum(1).max())], last.finished_scores[:, 0]


def _check_arguments(model: Transformer, max_new_tokens: int, bos_id: int, eos_id: int) -> None:
    """Check the decoding arguments up front, rather than failing after many steps."""
    check_int("max_new_tokens", max_new_tokens, minimum=1)
    # The decoder input of the last step holds BOS and every generated token but the last: max_new_tokens positions.
    check_length("max_new_tokens", max_new_tokens, model.config.max_positions)
    check_token_id("bos_id", bos_id, model.config.tgt_vocab_size)
    check_token_id("eos_id", eos_id, model.config.tgt_vocab_size)
