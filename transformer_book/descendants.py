"""What came next: GPT's decoder-only and BERT's encoder-only models, built from the package's own parts.

A GPT block is the encoder layer (:class:`transformer.EncoderLayer`) run under the decoder's causal mask; a BERT
block is the encoder layer as it is, trained to fill in masked tokens. Neither needs attention or layer code of its
own: each model here is embeddings (:mod:`transformer.embeddings`), the package's stack of encoder layers
(:class:`transformer.model.Encoder`) and an output head.

- :class:`GPT` (:class:`GPTConfig`): GPT-2's layout (Radford et al., 2019): pre-norm blocks, a final layer norm,
  learned positions, the output layer tied to the token embedding.
- :class:`BERT` (:class:`BERTConfig`): BERT's (Devlin et al., 2019): post-norm layers after a layer norm of the
  embeddings, segment embeddings, the masked-token head and the pooler.
- :func:`published_counts`: both built at GPT-2 small's and BERT-base's sizes, on the meta device (no memory is
  allocated), and counted against the published figures; :data:`DIFFERENCES`: what GPT-2 and BERT do otherwise
  than the original Transformer, and what these models still do otherwise than GPT-2 and BERT.

Both read ``(tokens (B, T), mask)`` and return logits ``(B, T, vocab_size)``, so the training wing trains them on
:class:`~transformer.train.language_model.LMBatch` batches (:func:`~transformer.train.recipes.train_decoder_only`,
:func:`~transformer.train.recipes.train_masked_tokens`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer.checks import (
    check_bool,
    check_device,
    check_heads,
    check_int,
    check_length,
    check_mask,
    check_positive,
    check_probability,
    check_tokens,
    checking_inputs,
    input_checks,
)
from transformer.config import TransformerConfig
from transformer.decoding import check_sampling, sample_next
from transformer.embeddings import LearnedPositionalEncoding, TokenEmbedding
from transformer.interop import copy_from_torch
from transformer.masks import causal_mask, padding_mask
from transformer.model import Encoder
from transformer.tokens import BOS_ID, EOS_ID, FIRST_SYMBOL, PAD_ID
from transformer.train import History, RunConfig, TaskConfig, TrainConfig
from transformer.train.language_model import LMBatch
from transformer.train.progress import Progress
from transformer.train.recipes import train_decoder_only, train_masked_tokens
from transformer.train.tasks import DEFAULT_VOCAB_SIZE
from transformer.utils import eval_mode, seeded

from .i18n import translatable
from .induction import separator_positions

INIT_STD = 0.02  # GPT-2's and BERT's initial weights: N(0, 0.02^2)


def _check_sizes(config: GPTConfig | BERTConfig) -> None:
    """The checks both configurations share, naming their own fields."""
    c = config
    for name in ("vocab_size", "max_positions", "d_ff", "n_layers"):
        check_int(name, getattr(c, name), minimum=1)
    check_heads(c.d_model, c.n_heads)
    check_probability("dropout", c.dropout)
    check_positive("layer_norm_eps", c.layer_norm_eps)
    if c.init_std is not None:
        check_positive("init_std", c.init_std)
    check_int("pad_id", c.pad_id, minimum=0, maximum=c.vocab_size - 1)


@dataclass
class GPTConfig:
    """Everything needed to build a :class:`GPT`. The defaults are GPT-2 small's (the released "124M" model); the
    vocabulary is the caller's (GPT-2's: 50,257 byte-level BPE tokens, :func:`gpt2_small_config`)."""

    vocab_size: int
    max_positions: int = 1024  # GPT-2's n_positions: the longest row it reads
    d_model: int = 768
    n_heads: int = 12
    d_ff: int = 3072  # 4 x d_model, as in the paper
    n_layers: int = 12
    dropout: float = 0.1  # GPT-2's, on the embeddings, the attention weights and every residual branch
    layer_norm_eps: float = 1e-5  # GPT-2's, and nn.LayerNorm's default
    init_std: float | None = INIT_STD  # GPT-2's initial weights; None: the package's own (see init_weights)
    pad_id: int = PAD_ID  # the id whose positions every mask hides

    def __post_init__(self) -> None:
        _check_sizes(self)

    def stack_config(self) -> TransformerConfig:
        """The package's configuration of the stack: ``n_layers`` pre-norm encoder layers with GELU and a final
        layer norm (GPT-2's ``ln_f``)."""
        return encoder_stack_config(self, norm_first=True, final_norm=True)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class BERTConfig:
    """Everything needed to build a :class:`BERT`. The defaults are BERT-base's; the vocabulary is the caller's
    (BERT-base uncased: 30,522 WordPiece tokens, :func:`bert_base_config`)."""

    vocab_size: int
    max_positions: int = 512  # BERT's max_position_embeddings
    d_model: int = 768
    n_heads: int = 12
    d_ff: int = 3072
    n_layers: int = 12
    type_vocab_size: int = 2  # segment embeddings: sentence A and sentence B; 0 for none
    dropout: float = 0.1  # BERT's hidden and attention dropout
    layer_norm_eps: float = 1e-12  # BERT's
    pooler: bool = True  # BertModel's tanh layer over the first token, which next-sentence prediction reads
    causal: bool = False  # True: each position sees only itself and those before it (a control for experiments)
    init_std: float | None = INIT_STD  # BERT's initial weights (truncated); None: the package's own
    pad_id: int = PAD_ID

    def __post_init__(self) -> None:
        _check_sizes(self)
        check_int("type_vocab_size", self.type_vocab_size, minimum=0)
        check_bool("pooler", self.pooler)
        check_bool("causal", self.causal)

    def stack_config(self) -> TransformerConfig:
        """The package's configuration of the stack: ``n_layers`` post-norm encoder layers with GELU, the paper's
        layout, and no final norm."""
        return encoder_stack_config(self, norm_first=False, final_norm=None)

    def to_dict(self) -> dict:
        return asdict(self)


def encoder_stack_config(
    config: GPTConfig | BERTConfig, norm_first: bool, final_norm: bool | None
) -> TransformerConfig:
    """The package's configuration of ``config``'s one stack: ``n_layers`` encoder layers with GELU and learned
    positions, in the layout ``norm_first`` and ``final_norm`` choose (no decoder)."""
    return TransformerConfig(
        src_vocab_size=config.vocab_size,
        tgt_vocab_size=config.vocab_size,
        d_model=config.d_model,
        n_heads=config.n_heads,
        d_ff=config.d_ff,
        n_encoder_layers=config.n_layers,
        n_decoder_layers=0,
        dropout=config.dropout,
        max_positions=config.max_positions,
        norm_first=norm_first,
        final_norm=final_norm,
        activation="gelu",
        layer_norm_eps=config.layer_norm_eps,
        positional_encoding="learned",
        pad_id=config.pad_id,
    )


def init_weights(model: nn.Module, std: float, residual_layers: int | None = None, truncate: bool = False) -> None:
    """GPT-2's and BERT's initialisation: every linear layer and embedding N(0, std^2) (both use 0.02), biases 0,
    layer norms 1 and 0. With ``residual_layers`` (GPT-2), the projections that write into the residual stream
    (attention's ``out_proj``, the feed-forward network's ``linear2``) get ``std / sqrt(2 * residual_layers)``: the
    stream sums two of them per block, and this keeps its variance from growing with depth. ``truncate`` (BERT's
    code) redraws values beyond two standard deviations.

    0.02 is about ``1 / sqrt(d_model)`` at their width, 768; at the book's widths (32) it is several times smaller
    than the package's own initialisation (Xavier-uniform linear layers with zero biases, N(0, 1/d_model) token
    rows, N(0, 0.02^2) positions), and small models start slower from it: ``init_std=None`` in the configurations
    keeps the package's, which this module's own layers follow too."""

    def normal_(weight: Tensor, std: float) -> None:
        if truncate:
            nn.init.trunc_normal_(weight, std=std, a=-2 * std, b=2 * std)
        else:
            nn.init.normal_(weight, std=std)

    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            residual = residual_layers is not None and name.endswith(("out_proj", "linear2"))
            normal_(module.weight, std / math.sqrt(2 * residual_layers) if residual else std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, (TokenEmbedding, LearnedPositionalEncoding, nn.Embedding)):
            normal_(module.weight, std)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)


def _init_as_the_package(linear: nn.Linear) -> None:
    """A linear layer of this module initialised as the package's own are: Xavier-uniform weight, zero bias."""
    nn.init.xavier_uniform_(linear.weight)
    nn.init.zeros_(linear.bias)


class OneStackModel(nn.Module):
    """What :class:`GPT` and :class:`BERT` share: input checks, the mask they attend under, and the attention
    maps of their stack."""

    config: GPTConfig | BERTConfig
    blocks: Encoder
    causal: bool

    def attention_mask(self, tokens: Tensor, mask: Tensor | None) -> Tensor:
        """``mask`` (default: the padding mask of ``tokens``), with the causal mask added if the model is causal:
        bool, broadcastable to ``(B, H, T, T)``."""
        if checking_inputs():
            self._check_inputs(tokens, mask)
        mask = padding_mask(tokens, self.config.pad_id) if mask is None else mask  # (B, 1, 1|T, T)
        return mask & causal_mask(tokens.size(1), device=tokens.device) if self.causal else mask  # (B, 1, T, T)

    @torch.no_grad()
    def attention_maps(self, tokens: Tensor, mask: Tensor | None = None, **inputs: Tensor | None) -> list[Tensor]:
        """Every layer's attention weights, taken before dropout: one ``(B, H, T, T)`` tensor per layer."""
        return self.blocks(self.embed(tokens, **inputs), self.attention_mask(tokens, mask), need_weights=True)[1]

    def num_parameters(self) -> int:
        """Trainable parameters, counting tied tensors once."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def _check_inputs(self, tokens: Tensor, mask: Tensor | None) -> None:
        c = self.config
        check_tokens(tokens, "tokens", c.vocab_size)
        check_length("tokens", tokens.size(1), c.max_positions)
        device = next(self.parameters()).device
        check_device(tokens, "tokens", device)
        if mask is not None:
            check_mask(mask, "mask", tokens.size(0), tokens.size(1), tokens.size(1), heads=c.n_heads)
            check_device(mask, "mask", device)


class GPT(OneStackModel):
    """A decoder-only Transformer in GPT-2's layout: token and learned position embeddings, the package's encoder
    layers (pre-norm, GELU) run under the causal mask, a final layer norm, and an output layer tied to the token
    embedding.

    ``forward(tokens (B, T), mask=None) -> logits (B, T, vocab_size)``: position t scores the token after tokens
    0..t. ``mask`` (bool, True = may attend, broadcastable to ``(B, 1, T, T)``) defaults to the padding mask of
    ``tokens``; the causal mask is always added. Where it differs from GPT-2 (:data:`DIFFERENCES`): its GELU is exact
    (GPT-2's is the tanh approximation), and the feed-forward network drops out after its activation too, as PyTorch's
    layers do; its parameters are GPT-2's, one for one (:func:`published_counts`: GPT-2 stacks the query, key and
    value projections in one matrix too).
    """

    causal = True

    def __init__(self, config: GPTConfig):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"config must be a GPTConfig; got {type(config).__name__}")
        self.config = c = config
        self.tok_embed = TokenEmbedding(c.vocab_size, c.d_model, scale=False)  # GPT-2's wte: no sqrt(d_model)
        self.positional = LearnedPositionalEncoding(c.d_model, c.max_positions)  # wpe
        self.embed_dropout = nn.Dropout(c.dropout)
        self.blocks = Encoder(c.stack_config())  # h: n_layers pre-norm blocks, and ln_f
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.init_std is not None:
            init_weights(self, c.init_std, residual_layers=c.n_layers)
        self.lm_head.weight = self.tok_embed.weight  # tied, as in GPT-2 (and the paper, section 3.4)

    def embed(self, tokens: Tensor) -> Tensor:
        """``(B, T)`` ids -> ``(B, T, d_model)``: token + position, then dropout."""
        return self.embed_dropout(self.positional(self.tok_embed(tokens)))  # (B, T, d_model)

    def forward(self, tokens: Tensor, mask: Tensor | None = None) -> Tensor:
        mask = self.attention_mask(tokens, mask)  # (B, 1, T, T)
        x, _ = self.blocks(self.embed(tokens), mask)  # (B, T, d_model), after ln_f
        return self.lm_head(x)  # (B, T, V)

    @torch.no_grad()
    def generate(
        self,
        prompt: Tensor,
        max_new_tokens: int,
        eos_id: int = EOS_ID,
        temperature: float | None = None,
        top_k: int | None = None,
        rng: torch.Generator | None = None,
    ) -> Tensor:
        """Continue ``prompt (B, T0)`` (rows of one length, no padding): ``(B, <= max_new_tokens)``, each row up to
        and with its ``eos_id``, then ``pad_id``. Greedy (the most probable token) unless ``temperature``, ``top_k``
        or ``rng`` is given: then each token is drawn by :func:`transformer.decoding.sample_next`, as
        :func:`~transformer.decoding.sample_decode` draws them (``temperature`` 1 if not given). Each step reads the
        whole row again (no cache)."""
        check_int("max_new_tokens", max_new_tokens, minimum=1)
        sampling = temperature is not None or top_k is not None or rng is not None
        temperature = 1.0 if temperature is None else temperature
        if sampling:
            check_sampling(temperature, top_k, rng, self.config.vocab_size)
        if checking_inputs():
            self._check_inputs(prompt, None)
            check_length("prompt + max_new_tokens", prompt.size(1) + max_new_tokens, self.config.max_positions)
        tokens, finished, new = prompt, torch.zeros(len(prompt), dtype=torch.bool, device=prompt.device), []
        with eval_mode(self), input_checks(enabled=False):  # checked above; the chosen ids are valid
            for _ in range(max_new_tokens):
                logits = self(tokens)[:, -1]  # (B, V): the next token's scores
                chosen = sample_next(logits, temperature, top_k, rng) if sampling else logits.argmax(dim=-1)  # (B,)
                next_tokens = chosen.masked_fill(finished, self.config.pad_id)  # (B,)
                new.append(next_tokens)
                finished |= next_tokens == eos_id
                if finished.all():
                    break
                tokens = torch.cat([tokens, next_tokens[:, None]], dim=1)  # (B, T + 1)
        return torch.stack(new, dim=1)  # (B, L)


class GPTGraph(nn.Module):
    """``model`` as one graph for export (``torch.export``; ONNX: :func:`transformer_book.playground_gpt.export_gpt_onnx`):
    ``tokens (B, T)`` in (right-padded rows allowed), the logits of every position ``(B, T, V)`` and every layer's
    attention maps ``(L, B, H, T, T)`` (taken before dropout) out."""

    def __init__(self, model: GPT):
        super().__init__()
        self.model = model
        self.train(model.training)

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        model = self.model
        x, maps = model.blocks(model.embed(tokens), model.attention_mask(tokens, None), need_weights=True)
        return model.lm_head(x), torch.stack(maps)  # (B, T, V), (L, B, H, T, T)


class BERTEmbeddings(nn.Module):
    """BERT's input: token + learned position + segment embeddings, summed, then a layer norm and dropout. The
    norm is BERT's own: its layers are post-norm, each normalising only its output, so the first one needs
    normalised input."""

    def __init__(self, config: BERTConfig):
        super().__init__()
        c = config
        self.tok_embed = TokenEmbedding(c.vocab_size, c.d_model, scale=False)  # word_embeddings
        self.positional = LearnedPositionalEncoding(c.d_model, c.max_positions)  # position_embeddings
        self.segment = nn.Embedding(c.type_vocab_size, c.d_model) if c.type_vocab_size else None  # token_type
        self.norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.dropout)
        if self.segment is not None:
            nn.init.normal_(self.segment.weight, std=c.d_model**-0.5)  # as the package's token rows

    def forward(self, tokens: Tensor, segments: Tensor | None = None) -> Tensor:
        """``tokens (B, T)``, ``segments (B, T)`` (0 for sentence A, 1 for B; default all 0) -> ``(B, T, d_model)``."""
        x = self.positional(self.tok_embed(tokens))  # (B, T, d_model)
        if self.segment is not None:
            x = x + self.segment(torch.zeros_like(tokens) if segments is None else segments)
        return self.dropout(self.norm(x))  # (B, T, d_model)


class MaskedLMHead(nn.Module):
    """BERT's masked-token head: a dense layer, GELU and a layer norm, then the output layer, whose weight is the
    token embedding (tied) and whose bias is its own."""

    def __init__(self, config: BERTConfig, embedding: TokenEmbedding):
        super().__init__()
        c = config
        self.dense = nn.Linear(c.d_model, c.d_model)
        self.norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.decoder = nn.Linear(c.d_model, c.vocab_size)  # the output layer: its bias is its own ...
        self.decoder.weight = embedding.weight  # ... its weight the token embedding (tied)
        _init_as_the_package(self.dense)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, x: Tensor) -> Tensor:
        """``(B, T, d_model)`` -> logits ``(B, T, vocab_size)``."""
        return self.decoder(self.norm(F.gelu(self.dense(x))))  # (B, T, d_model) -> (B, T, V)


class Pooler(nn.Module):
    """BertModel's pooler: ``tanh(dense(x[:, 0]))``, the first token's vector (BERT's ``[CLS]``) turned into one
    ``(B, d_model)`` summary of the row, which next-sentence prediction (and fine-tuning for classification) reads."""

    def __init__(self, d_model: int):
        super().__init__()
        self.dense = nn.Linear(d_model, d_model)
        _init_as_the_package(self.dense)

    def forward(self, x: Tensor) -> Tensor:
        return torch.tanh(self.dense(x[:, 0]))  # (B, d_model)


class BERT(OneStackModel):
    """An encoder-only Transformer in BERT's layout: embeddings with their layer norm (:class:`BERTEmbeddings`), the
    package's encoder layers (post-norm, GELU) over the whole row, the masked-token head (:class:`MaskedLMHead`) and,
    if configured, the pooler (:class:`Pooler`).

    ``forward(tokens (B, T), mask=None, segments=None) -> logits (B, T, vocab_size)``: at every position, scores
    for the token that belongs there, read from both sides. ``mask`` defaults to the padding mask of ``tokens``.
    :meth:`encode` returns the hidden states, :meth:`pool` the pooler's summary. Where it differs from BERT
    (:data:`DIFFERENCES`): the feed-forward network drops out after its activation too, and there is no
    next-sentence head (2 x d_model + 2 parameters); the body's parameters are BertModel's, one for one
    (:func:`published_counts`: BERT keeps the query, key and value projections in three matrices, the package
    stacks them in one).
    """

    def __init__(self, config: BERTConfig):
        super().__init__()
        if not isinstance(config, BERTConfig):
            raise TypeError(f"config must be a BERTConfig; got {type(config).__name__}")
        self.config = c = config
        self.causal = c.causal
        self.embeddings = BERTEmbeddings(c)
        self.blocks = Encoder(c.stack_config())  # n_layers post-norm layers
        self.pooler = Pooler(c.d_model) if c.pooler else None
        self.mlm_head = MaskedLMHead(c, self.embeddings.tok_embed)
        if c.init_std is not None:
            init_weights(self, c.init_std, truncate=True)

    def embed(self, tokens: Tensor, segments: Tensor | None = None) -> Tensor:
        """``(B, T)`` ids -> ``(B, T, d_model)``, normalised (:class:`BERTEmbeddings`)."""
        if segments is not None and checking_inputs():
            if not self.config.type_vocab_size:
                raise ValueError("segments need segment embeddings: build the model with type_vocab_size >= 1")
            check_tokens(segments, "segments", self.config.type_vocab_size)
            if segments.shape != tokens.shape:
                raise ValueError(
                    f"segments must have the shape of tokens {tuple(tokens.shape)}; got {tuple(segments.shape)}"
                )
        return self.embeddings(tokens, segments)

    def encode(self, tokens: Tensor, mask: Tensor | None = None, segments: Tensor | None = None) -> Tensor:
        """``tokens (B, T)`` -> hidden states ``(B, T, d_model)``: what BertModel returns first."""
        mask = self.attention_mask(tokens, mask)  # (B, 1, 1|T, T)
        return self.blocks(self.embed(tokens, segments), mask)[0]  # (B, T, d_model)

    def forward(self, tokens: Tensor, mask: Tensor | None = None, segments: Tensor | None = None) -> Tensor:
        return self.mlm_head(self.encode(tokens, mask, segments))  # (B, T, V)

    def pool(self, hidden: Tensor) -> Tensor:
        """Hidden states ``(B, T, d_model)`` -> the pooler's ``(B, d_model)`` (what BertModel returns second)."""
        if self.pooler is None:
            raise ValueError("this BERT has no pooler: build it with BERTConfig(pooler=True)")
        return self.pooler(hidden)


def gpt2_small_config(**overrides) -> GPTConfig:
    """GPT-2 small: 50,257 tokens, 1,024 positions, 12 layers of width 768 with 12 heads."""
    return GPTConfig(**{"vocab_size": 50257, **overrides})


def bert_base_config(**overrides) -> BERTConfig:
    """BERT-base, uncased: 30,522 tokens, 512 positions, 2 segments, 12 layers of width 768 with 12 heads."""
    return BERTConfig(**{"vocab_size": 30522, **overrides})


def on_meta(model_class: type[nn.Module], config: GPTConfig | BERTConfig) -> nn.Module:
    """``model_class(config)`` built on the meta device: every tensor has its shape and no memory, so a model of
    hundreds of millions of parameters is counted in milliseconds."""
    with torch.device("meta"):
        return model_class(config)


def parameters_by_part(model: nn.Module) -> dict[str, int]:
    """Parameters per top-level part of ``model`` (its children, in order), a tied tensor counted in the first part
    that holds it (so the parts add up to :meth:`~OneStackModel.num_parameters`)."""
    seen, parts = set(), {}
    for name, child in model.named_children():
        fresh = [p for p in child.parameters() if id(p) not in seen]
        seen.update(id(p) for p in fresh)
        parts[name] = sum(p.numel() for p in fresh)
    return parts


@dataclass(frozen=True)
class PublishedCount:
    """A published parameter count, what it includes, and where it comes from."""

    model: str
    parameters: int
    includes: str  # shown through tr(), as source is
    source: str


PUBLISHED = {
    "gpt2": PublishedCount(
        "GPT-2 small",
        124_439_808,
        translatable("token and position embeddings, 12 blocks, the final layer norm; the output layer is tied"),
        translatable(
            "OpenAI's released 124M checkpoint, counted by Hugging Face transformers' GPT2Model (Radford et al., "
            "2019, table 2, rounded it to 117M)"
        ),
    ),
    "bert": PublishedCount(
        "BERT-base (uncased)",
        109_482_240,
        translatable("embeddings and their layer norm, 12 layers, the pooler; not the pre-training heads"),
        translatable(
            "google-research/bert's BERT-Base, Uncased, counted by Hugging Face transformers' BertModel (Devlin et "
            "al., 2019, section 3: 110M)"
        ),
    ),
}


def published_counts() -> dict[str, dict[str, int]]:
    """GPT-2 small and BERT-base built from this module's classes (on the meta device) and counted:
    ``{"gpt2": {...}, "bert": {...}}``, each with ``"counted"`` (what the published figure includes: for BERT the
    body without the masked-token head), ``"published"``, ``"difference"`` and the parameters of each part."""
    gpt, bert = on_meta(GPT, gpt2_small_config()), on_meta(BERT, bert_base_config())
    gpt_parts, bert_parts = parameters_by_part(gpt), parameters_by_part(bert)
    counted = {"gpt2": gpt.num_parameters(), "bert": bert.num_parameters() - bert_parts["mlm_head"]}
    parts = {"gpt2": gpt_parts, "bert": bert_parts}
    return {
        name: {
            "counted": counted[name],
            "published": PUBLISHED[name].parameters,
            "difference": counted[name] - PUBLISHED[name].parameters,
            **parts[name],
        }
        for name in PUBLISHED
    }


def gelu_approximation_gap() -> float:
    """The largest difference between exact GELU (``x * Phi(x)``, this package's, PyTorch's default and Hugging
    Face's BERT) and GPT-2's tanh approximation, over x in [-10, 10] (beyond, both are 0 or x to float precision)."""
    x = torch.linspace(-10, 10, 200_001, dtype=torch.float64)
    return float((F.gelu(x) - F.gelu(x, approximate="tanh")).abs().max())


@dataclass(frozen=True)
class Difference:
    """One way GPT-2 and BERT depart from the original Transformer: what the paper (and this package's
    :class:`~transformer.Transformer`) does, what GPT-2 and BERT do, and what this module's models still do otherwise
    than GPT-2 and BERT ("" where nothing). Every field is shown through ``tr()``; ``changes_count``: whether it
    changes the parameter count."""

    topic: str
    paper: str
    gpt2: str
    bert: str
    here: str
    changes_count: bool


DIFFERENCES = (
    Difference(
        translatable("layout"),
        translatable("encoder and decoder, with cross-attention"),
        translatable("decoder only: no encoder, no cross-attention"),
        translatable("encoder only"),
        "",
        True,
    ),
    Difference(
        translatable("attention mask"),
        translatable("encoder: padding; decoder: padding and causal"),
        translatable("causal: each position sees those before it"),
        translatable("padding only: every position sees both sides"),
        "",
        False,
    ),
    Difference(
        translatable("objective"),
        translatable("translation: the next target token, given the source"),
        translatable("the next token of web text"),
        translatable("masked tokens (15 %: 80 % [MASK], 10 % random, 10 % kept) and next-sentence prediction"),
        translatable("no next-sentence head"),
        True,
    ),
    Difference(
        translatable("positions"),
        translatable("fixed sinusoids"),
        translatable("learned, 1,024"),
        translatable("learned, 512"),
        "",
        True,
    ),
    Difference(
        translatable("token embedding"),
        translatable("scaled by sqrt(d_model)"),
        translatable("not scaled"),
        translatable("not scaled; plus segment embeddings (sentence A or B)"),
        "",
        True,
    ),
    Difference(
        translatable("layer norm"),
        translatable("post-norm: after each residual sum"),
        translatable("pre-norm: before each sub-layer, and a final layer norm"),
        translatable("post-norm, and a layer norm of the embeddings"),
        "",
        True,
    ),
    Difference(
        translatable("layer norm epsilon"),
        translatable("not stated (PyTorch: 1e-5)"),
        translatable("1e-5"),
        translatable("1e-12"),
        "",
        False,
    ),
    Difference(
        translatable("activation"),
        translatable("ReLU"),
        translatable("GELU, tanh approximation"),
        translatable("GELU (Google's code: tanh approximation; Hugging Face's: exact)"),
        translatable("exact GELU"),
        False,
    ),
    Difference(
        translatable("dropout"),
        translatable("0.1 on the embeddings and on each sub-layer's output"),
        translatable("0.1 there and on the attention weights"),
        translatable("0.1 there and on the attention weights"),
        translatable("also after the feed-forward activation, as PyTorch's layers (no effect at inference)"),
        False,
    ),
    Difference(
        translatable("output layer"),
        translatable("tied to the embeddings"),
        translatable("tied to the token embedding, no bias"),
        translatable("masked-token head: dense, GELU, layer norm, then the tied embedding and a bias"),
        "",
        True,
    ),
    Difference(
        translatable("pooler"),
        translatable("none"),
        translatable("none"),
        translatable("a tanh layer over the first token ([CLS]), for next-sentence prediction"),
        "",
        True,
    ),
    Difference(
        translatable("initialisation"),
        translatable("not stated"),
        translatable("N(0, 0.02); projections into the residual stream scaled by 1/sqrt(2 N) for N blocks"),
        translatable("N(0, 0.02), truncated at 2 standard deviations"),
        "",
        False,
    ),
    Difference(
        translatable("vocabulary"),
        translatable("37,000 byte-pair tokens shared by English and German"),
        translatable("50,257 byte-level BPE tokens"),
        translatable("30,522 WordPiece tokens (uncased)"),
        translatable("the caller's: vocab_size"),
        True,
    ),
)


def torch_twin(model: GPT | BERT, jitter: float = 0.1) -> nn.TransformerEncoder:
    """PyTorch's own encoder stack (``nn.TransformerEncoder`` of ``nn.TransformerEncoderLayer``) in ``model``'s
    layout: pre-norm with a final layer norm for :class:`GPT`, post-norm for :class:`BERT`, GELU, no dropout. Its
    random weights, moved by up to ``jitter`` so that norms and biases are not 1 and 0, are copied into ``model``'s
    stack (:func:`transformer.interop.copy_from_torch`): the two then compute the same function, PyTorch's under the
    mask ``model`` adds itself. Returned in eval mode."""
    c = model.config
    layer = nn.TransformerEncoderLayer(
        c.d_model,
        c.n_heads,
        c.d_ff,
        dropout=0.0,
        activation="gelu",
        batch_first=True,
        norm_first=isinstance(model, GPT),
        layer_norm_eps=c.layer_norm_eps,
    )
    final = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps) if isinstance(model, GPT) else None
    reference = nn.TransformerEncoder(layer, c.n_layers, norm=final, enable_nested_tensor=False).eval()
    with torch.no_grad():
        for p in reference.parameters():
            p.add_(torch.randn_like(p) * jitter)
    copy_from_torch(model.blocks, reference)
    return reference


# ---- the book's small models of one stack, trained on the synthetic tasks ------------------------------------


def small_gpt_config(vocab_size: int = DEFAULT_VOCAB_SIZE, **overrides) -> GPTConfig:
    """A GPT of as many parameters as the training chapter's small encoder-decoder model
    (:func:`~transformer.train.recipes.small_model_config`: 60,781 for the 13 ids of the synthetic tasks): its width,
    heads and positions, 4 blocks for its 2 + 2 layers, and the feed-forward layer widened from 128 to 160 to make up
    for the decoder's cross-attention, which a decoder-only model has none of (61,664). No dropout and the package's
    initialisation, as that model."""
    values = dict(
        vocab_size=vocab_size, max_positions=64, d_model=32, n_heads=2, d_ff=160, n_layers=4, dropout=0.0, init_std=None
    )
    return GPTConfig(**{**values, **overrides})


def small_bert_config(vocab_size: int = DEFAULT_VOCAB_SIZE + 1, **overrides) -> BERTConfig:
    """An encoder-only model the size of :func:`small_gpt_config`'s for the masked-token task (whose vocabulary is the
    task's 13 ids and the mask): no segments (one sentence per row) and no pooler (no next-sentence prediction).
    ``causal=True`` gives the same model and parameters, each position seeing only those before it."""
    sizes = ("max_positions", "d_model", "n_heads", "d_ff", "n_layers", "dropout", "init_std")
    gpt = small_gpt_config(vocab_size)
    values = {name: getattr(gpt, name) for name in sizes} | dict(vocab_size=vocab_size, type_vocab_size=0, pooler=False)
    return BERTConfig(**{**values, **overrides})


def train_gpt(
    config: GPTConfig,
    data: TaskConfig | str = "copy",
    train_config: TrainConfig | None = None,
    run: RunConfig | None = None,
    progress: Progress = True,
) -> tuple[GPT, History]:
    """A :class:`GPT` of ``config`` (its initial weights drawn with ``run.seed``) trained on ``data`` written as
    ``x <sep> y </s>`` (:func:`~transformer.train.recipes.train_decoder_only`): ``(model, history)``, what
    :func:`transformer_book.runs.trained` keeps."""
    run = run or RunConfig()
    with seeded(run.seed):
        model = GPT(config)
    return model, train_decoder_only(model, data, train_config, run, progress)


def train_bert(
    config: BERTConfig,
    data: TaskConfig | str = "copy",
    train_config: TrainConfig | None = None,
    run: RunConfig | None = None,
    progress: Progress = True,
) -> tuple[BERT, History]:
    """A :class:`BERT` of ``config`` (its initial weights drawn with ``run.seed``) trained to fill in the masked
    symbols of ``data``'s rows (:func:`~transformer.train.recipes.train_masked_tokens`): ``(model, history)``."""
    run = run or RunConfig()
    with seeded(run.seed):
        model = BERT(config)
    return model, train_masked_tokens(model, data, train_config, run, progress)


@torch.no_grad()
def masked_accuracy_by_side(model: nn.Module, batches: Sequence[LMBatch], sep_id: int = BOS_ID) -> dict[str, float]:
    """The share of masked symbols ``model`` fills in right, apart for those in ``x`` (``"right"``: in the rows
    ``x <sep> y`` of copy and reverse, their answer is written again in ``y``, to their right) and those in ``y``
    (``"left"``: their answer is in ``x``), and ``"blind"``: what a model that cannot see the other side scores on
    the ``"right"`` ones by reading its own input (the 10 % of chosen symbols left as they were, and random
    replacements that hit the symbol) and guessing evenly among the task's symbols otherwise."""
    right, total, blind = dict(left=0, right=0), dict(left=0, right=0), 0.0
    symbols = model.config.vocab_size - 1 - FIRST_SYMBOL  # the task's symbols: the vocabulary less the mask
    device = next(model.parameters()).device
    with eval_mode(model):
        for batch in (batch.to(device) for batch in batches):
            predicted = model(batch.tokens, batch.mask).argmax(dim=-1)  # (B, T)
            sep = separator_positions(batch.tokens, sep_id)[:, None]  # (B, 1)
            position = torch.arange(batch.tokens.size(1), device=batch.tokens.device)[None]  # (1, T)
            chosen = batch.tgt_out != model.config.pad_id  # (B, T)
            for side, where in (("right", position < sep), ("left", position > sep)):
                scored = chosen & where
                right[side] += int((predicted == batch.tgt_out)[scored].sum())
                total[side] += int(scored.sum())
            in_x = chosen & (position < sep)
            shown = (batch.tokens == batch.tgt_out) & in_x  # the input is the answer
            blind += float(shown.sum()) + float((in_x & ~shown).sum()) / symbols
    return {side: right[side] / total[side] for side in total} | {"blind": blind / total["right"]}
