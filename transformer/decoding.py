"""Turning a trained model into outputs: greedy decoding (with or without a key/value cache) and beam search.

At inference time there is no target to shift right: the decoder starts from ``BOS`` alone, predicts one token,
appends it to its own input, and repeats until it says ``EOS``. The source is encoded once. Without a cache, each
step runs the decoder over the whole prefix again (step t costs t positions); with a
:class:`~transformer.model.DecoderCache` each decoder layer keeps the keys and values of the positions it has
already seen (and the projected encoder memory), so step t feeds only the newest token.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from .checks import check_int, check_length, check_token_id, input_checks, renamed_keywords
from .masks import causal_mask
from .model import DecoderCache, Transformer
from .tokens import BOS_ID, EOS_ID
from .utils import eval_mode


@dataclass
class GreedyStep:
    """What one greedy step saw and chose, for every row of the batch."""

    decoder_input: Tensor  # (B, t): BOS and the tokens chosen so far
    log_probs: Tensor  # (B, V): log-probabilities of the next token
    next_tokens: Tensor  # (B,): the argmax (PAD for rows that had already finished)
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


@renamed_keywords(max_len="max_new_tokens")
def greedy_steps(
    model: Transformer, src: Tensor, max_new_tokens: int, use_cache: bool = True, src_mask: Tensor | None = None,
    bos_id: int = BOS_ID, eos_id: int = EOS_ID,
) -> Iterator[GreedyStep]:
    """Greedy decoding one step at a time (a generator), for inspecting or drawing it. :func:`greedy_decode` runs it.

    The model runs on its own device (``src`` and ``src_mask`` are moved there); every step comes back on ``src``'s
    device, so a source made on the CPU is decoded on the model's GPU and inspected on the CPU.
    """
    _check_arguments(model, max_new_tokens, bos_id, eos_id)
    home, (src, src_mask) = src.device, _on_model_device(model, src, src_mask)  # home: where the steps go back
    pad_id = model.config.pad_id
    with eval_mode(model):  # held until the last step is taken; gradients are switched off step by step
        with torch.no_grad():
            memory, src_mask = model.encode(src, src_mask)  # (B, S, d_model), (B, 1, 1|T, S); once
        cache = model.new_cache(capacity=max_new_tokens) if use_cache else None
        bias = _output_bias(model, bos_id, src.device)  # (V,)
        tokens = torch.full((src.size(0), max_new_tokens + 1), pad_id, dtype=torch.long, device=src.device)  # (B, 1 + N)
        tokens[:, 0] = bos_id  # the decoder input: BOS, then the tokens chosen so far
        finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)  # (B,)
        for t in range(max_new_tokens):
            # The first step checks every input; later ones only add argmax ids, valid by construction.
            with torch.no_grad(), input_checks(enabled=t == 0):
                log_probs = _next_log_probs(model, tokens[:, : t + 1], memory, src_mask, cache, bias)  # (B, V)
            next_tokens = log_probs.argmax(dim=-1).masked_fill(finished, pad_id)  # (B,)
            done = finished | (next_tokens == eos_id)  # (B,)
            yield GreedyStep(*(x.to(home) for x in (tokens[:, : t + 1], log_probs, next_tokens, done)))
            tokens[:, t + 1], finished = next_tokens, done
            if finished.all():
                break


def _on_model_device(model: Transformer, src: Tensor, src_mask: Tensor | None) -> tuple[Tensor, Tensor | None]:
    """``src`` and ``src_mask`` moved to where ``model``'s weights are (no copy when they are there already)."""
    device = next(model.parameters()).device
    return src.to(device), None if src_mask is None else src_mask.to(device)


@renamed_keywords(max_len="max_new_tokens")
def greedy_decode(
    model: Transformer, src: Tensor, max_new_tokens: int, use_cache: bool = True, src_mask: Tensor | None = None,
    bos_id: int = BOS_ID, eos_id: int = EOS_ID,
) -> Tensor:
    """Decode a batch greedily: at each step take the most probable next token.

    ``src (B, S)`` -> ``(B, L)`` long, ``L <= max_new_tokens``: the generated ids after BOS, each row ending with its
    EOS and padded with PAD after it (a row that never says EOS runs to ``max_new_tokens``). Cached and uncached decoding give
    the same tokens; the cache only saves work. The model decodes on its own device; the tokens come back on
    ``src``'s device.
    """
    steps = greedy_steps(model, src, max_new_tokens, use_cache, src_mask, bos_id, eos_id)
    chosen = [step.next_tokens for step in steps]
    return torch.stack(chosen, dim=1)  # (B, L), on src's device


@dataclass
class BeamTrace:
    """Every step of a beam search, for drawing its hypotheses: at step t, beam k of source b extended beam
    ``parents[t][b, k]`` of step t - 1 with token ``tokens[t][b, k]``, reaching the summed log-probability
    ``scores[t][b, k]``. ``best[b]`` is the final beam returned for source b."""

    parents: list[Tensor]  # (B, K) each
    tokens: list[Tensor]  # (B, K) each
    scores: list[Tensor]  # (B, K) each
    best: Tensor  # (B,)


def length_penalty_factor(lengths: Tensor, alpha: float) -> Tensor:
    """GNMT's length normalisation ``((5 + |Y|) / 6) ** alpha`` (Wu et al., 2016), used by the paper with alpha 0.6.

    Summed log-probabilities only fall as a hypothesis grows, so unnormalised beam search prefers short outputs;
    dividing by this factor (1 for alpha 0) evens that out.
    """
    return ((5.0 + lengths.float()) / 6.0) ** alpha


@renamed_keywords(max_len="max_new_tokens")
def beam_search(
    model: Transformer, src: Tensor, beam_size: int, max_new_tokens: int, length_penalty: float = 0.6,
    use_cache: bool = True, src_mask: Tensor | None = None, bos_id: int = BOS_ID, eos_id: int = EOS_ID,
    return_trace: bool = False,
) -> tuple[Tensor, Tensor] | tuple[Tensor, Tensor, BeamTrace]:
    """Keep the ``beam_size`` most probable partial outputs per source instead of one, batched over sources.

    Returns ``(tokens (B, L), scores (B,))``: the best hypothesis per source in the format of :func:`greedy_decode`,
    and its summed log-probability divided by :func:`length_penalty_factor`. A finished hypothesis stays in the beam,
    extended with PAD at no cost. ``beam_size=1`` is greedy decoding exactly. With ``return_trace``, also returns a
    :class:`BeamTrace` (on the CPU). The model decodes on its own device; tokens and scores come back on ``src``'s.
    """
    _check_arguments(model, max_new_tokens, bos_id, eos_id)
    src_device = src.device
    src, src_mask = _on_model_device(model, src, src_mask)
    check_int("beam_size", beam_size, minimum=1)
    pad_id, K = model.config.pad_id, beam_size
    with eval_mode(model), torch.no_grad():
        memory, src_mask = model.encode(src, src_mask)  # (B, S, d_model), (B, 1, 1|T, S)
        B = src.size(0)
        memory = memory.repeat_interleave(K, dim=0)  # (B * K, S, d_model): one copy per beam
        src_mask = src_mask.expand(B, *src_mask.shape[1:]).repeat_interleave(K, dim=0)  # (B * K, 1, 1|T, S)
        cache = model.new_cache(capacity=max_new_tokens) if use_cache else None
        bias = _output_bias(model, bos_id, src.device)  # (V,)
        tokens = torch.full((B * K, 1), bos_id, dtype=torch.long, device=src.device)  # (B * K, 1)
        scores = torch.full((B, K), -math.inf, device=src.device)  # (B, K)
        scores[:, 0] = 0.0  # one live hypothesis to start with, so the first step does not pick K copies of it
        finished = torch.zeros(B * K, dtype=torch.bool, device=src.device)  # (B * K,)
        lengths = torch.zeros(B * K, dtype=torch.long, device=src.device)  # generated tokens, EOS included
        trace = BeamTrace([], [], [], torch.zeros(B, dtype=torch.long))
        for t in range(max_new_tokens):
            with input_checks(enabled=t == 0):  # as in greedy_steps: later steps only add ids chosen by topk
                log_probs = _next_log_probs(model, tokens, memory, src_mask, cache, bias)  # (B * K, V)
            V = log_probs.size(-1)
            log_probs[finished] = -math.inf  # a finished hypothesis may only grow by PAD, at no cost
            log_probs[finished, pad_id] = 0.0
            candidates = (scores.view(B * K, 1) + log_probs).view(B, K * V)  # (B, K * V)
            scores, index = candidates.topk(K, dim=1)  # (B, K) each
            parent, token = index // V, index % V  # (B, K) each
            rows = (torch.arange(B, device=src.device)[:, None] * K + parent).view(-1)  # (B * K,)
            tokens = torch.cat([tokens[rows], token.view(-1, 1)], dim=1)  # (B * K, t + 1)
            lengths = lengths[rows] + (~finished[rows]).long()
            finished = finished[rows] | (token.view(-1) == eos_id)
            if cache is not None:
                cache.reorder(rows)
            trace.parents.append(parent.cpu())
            trace.tokens.append(token.cpu())
            trace.scores.append(scores.cpu())
            if finished.all():
                break
        normalised = scores / length_penalty_factor(lengths.view(B, K), length_penalty)  # (B, K)
        best_score, best = normalised.max(dim=1)  # (B,) each
        chosen = tokens.view(B, K, -1)[torch.arange(B, device=src.device), best, 1:]  # (B, t), BOS dropped
        width = int(lengths.view(B, K).gather(1, best[:, None]).max())
        trace.best = best.cpu()
    result = (chosen[:, :width].to(src_device), best_score.to(src_device))
    return (*result, trace) if return_trace else result


def _check_arguments(model: Transformer, max_new_tokens: int, bos_id: int, eos_id: int) -> None:
    """Check the decoding arguments up front, rather than failing after many steps."""
    check_int("max_new_tokens", max_new_tokens, minimum=1)
    # The decoder input of the last step holds BOS and every generated token but the last: max_new_tokens positions.
    check_length("max_new_tokens", max_new_tokens, model.config.max_positions)
    check_token_id("bos_id", bos_id, model.config.tgt_vocab_size)
    check_token_id("eos_id", eos_id, model.config.tgt_vocab_size)
