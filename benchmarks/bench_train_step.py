"""Training-step time of ``transformer.Transformer`` against ``torch.nn.Transformer`` with the same sizes.

PyTorch's model is wrapped in the package's own token embeddings, sinusoidal positional encoding, embedding dropout
and a linear generator, and gets the package's masks converted to its conventions, so the two models compute the same
function (checked: with the weights copied across, their logits agree before any timing). Both train with dropout 0.1,
the same loss and Adam; one step is forward + loss + backward + optimizer step. Steps alternate between the two
models in many rounds (order reversed every round); the ratio ``ours / torch`` of each round is kept, and its median
and quartiles are reported (goal: median <= 1.0). Each row also records how many PyTorch operations one step of
each model runs (a profile of one step) and the load average while it was measured.

CPU in fp32 always, with one thread unless ``--threads`` says otherwise; on a CUDA GPU also fp32 and bf16
(autocast). Run ``python benchmarks/bench_train_step.py`` (about 2-3 minutes on 2 cores; ``--quick`` for a
seconds-long smoke run); results go to ``benchmarks/results/train_step.json``.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_average, median_ms, paired_ratio, parse_args, parser, time_many, write_results  # noqa: E402

from transformer import Transformer, TransformerConfig, causal_mask, padding_mask
from transformer.embeddings import SinusoidalPositionalEncoding, TokenEmbedding
from transformer.interop import copy_from_torch  # noqa: E402
from transformer.masks import key_padding_mask, to_torch_mask
from transformer.tokens import PAD_ID as PAD
from transformer_book.results import profile_ops  # noqa: E402

VOCAB = 1000
# nn.Transformer's inference fast path (used only for the equivalence check) warns that nested tensors are a prototype.
warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")


class TorchReference(nn.Module):
    """``torch.nn.Transformer`` between the package's embeddings and a linear generator: the package's model, layer
    for layer, with PyTorch's encoder and decoder stacks (which always end with a layer norm)."""

    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.src_embed = TokenEmbedding(c.src_vocab_size, c.d_model)
        self.tgt_embed = TokenEmbedding(c.tgt_vocab_size, c.d_model)
        self.positional = SinusoidalPositionalEncoding(c.d_model, c.max_positions)
        self.embed_dropout = nn.Dropout(c.dropout)
        self.core = nn.Transformer(
            c.d_model,
            c.n_heads,
            c.n_encoder_layers,
            c.n_decoder_layers,
            c.d_ff,
            c.dropout,
            activation=c.activation,
            layer_norm_eps=c.layer_norm_eps,
            batch_first=True,
            norm_first=c.norm_first,
        )
        self.lm_head = nn.Linear(c.d_model, c.tgt_vocab_size)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        src_padding = key_padding_mask(padding_mask(src, PAD))  # (B, S), True = padding
        tgt_padding = key_padding_mask(padding_mask(tgt, PAD))  # (B, T)
        future = to_torch_mask(causal_mask(tgt.size(1), device=tgt.device))[0, 0]  # (T, T), True = hidden
        hidden = self.core(
            self.embed_dropout(self.positional(self.src_embed(src))),
            self.embed_dropout(self.positional(self.tgt_embed(tgt))),
            tgt_mask=future,
            src_key_padding_mask=src_padding,
            tgt_key_padding_mask=tgt_padding,
            memory_key_padding_mask=src_padding,
        )  # (B, T, d_model)
        return self.lm_head(hidden)  # (B, T, V)


def build_pair(config: TransformerConfig, device: torch.device) -> tuple[Transformer, TorchReference]:
    """The package's model and the reference, with identical weights."""
    torch.manual_seed(0)
    reference = TorchReference(config).to(device)
    ours = Transformer(config).to(device)
    copy_from_torch(ours, reference.core)
    with torch.no_grad():
        ours.src_embed.weight.copy_(reference.src_embed.weight)
        ours.tgt_embed.weight.copy_(reference.tgt_embed.weight)
        ours.lm_head.load_state_dict(reference.lm_head.state_dict())
    assert ours.num_parameters() == sum(p.numel() for p in reference.parameters())
    return ours, reference


def make_batch(batch: int, length: int, device: torch.device, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Source ``(B, S)`` and target ``(B, T + 1)`` ids; every sequence has a random length in [S/2, S], then padding."""

    def padded(n: int) -> Tensor:
        ids = torch.randint(1, VOCAB, (batch, n), generator=generator)
        lengths = torch.randint(max(1, n // 2), n + 1, (batch,), generator=generator)
        ids[torch.arange(n)[None, :] >= lengths[:, None]] = PAD
        return ids.to(device)

    return padded(length), padded(length + 1)


def max_logit_difference(ours: nn.Module, reference: nn.Module, src: Tensor, tgt: Tensor) -> float:
    """Largest |logit difference| in eval mode (no dropout): ~1e-6 when both compute the same function."""
    ours.eval(), reference.eval()
    with torch.no_grad():
        out, ref = ours(src, tgt), reference(src, tgt)
        real = tgt != PAD  # PyTorch's fused kernels may leave padded query rows with other values
        return (out - ref)[real].abs().max().item()


def train_step(model: nn.Module, src: Tensor, tgt: Tensor, dtype: torch.dtype):
    """One closure = forward, loss (padding ignored), backward and an Adam step."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    device_type = src.device.type
    autocast = (lambda: torch.autocast(device_type, dtype=dtype)) if dtype != torch.float32 else contextlib.nullcontext

    def step() -> None:
        with autocast():
            logits = model(src, tgt_in)  # (B, T, V)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), tgt_out.reshape(-1), ignore_index=PAD)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def settings(quick: bool) -> dict:
    if quick:
        return dict(d_models=(32,), seq_lens=(16,), tokens_per_batch=64, layers=1, rounds={32: 3})
    # 21 rounds per width: a d_model 64 step takes ~0.05 s, a d_model 512 step ~0.7 s on one core; at 512, 11 rounds
    # left medians that moved by up to 0.19 between runs of the same code.
    return dict(d_models=(64, 512), seq_lens=(32, 64, 256), tokens_per_batch=512, layers=2, rounds={64: 21, 512: 21})


def targets() -> list[tuple[torch.device, torch.dtype]]:
    """CPU fp32; with a GPU also CUDA fp32 and bf16."""
    runs = [(torch.device("cpu"), torch.float32)]
    if torch.cuda.is_available():
        runs += [(torch.device("cuda"), torch.float32), (torch.device("cuda"), torch.bfloat16)]
    return runs


def main() -> None:
    args = parse_args(parser(__doc__.splitlines()[0]))
    s = settings(args.quick)
    results = []
    print(
        f"{'device':>6} {'dtype':>9} {'d_model':>7} {'seq':>4} {'batch':>5} {'ours ms':>9} {'torch ms':>9} "
        f"{'ratio (quartiles)':>19} {'ops ours/torch':>15} {'load':>5}"
    )
    for device, dtype in targets():
        for d_model in s["d_models"]:
            for seq_len in s["seq_lens"]:
                n_heads = max(4, d_model // 64)
                config = TransformerConfig(
                    VOCAB,
                    VOCAB,
                    d_model=d_model,
                    n_heads=n_heads,
                    d_ff=4 * d_model,
                    n_encoder_layers=s["layers"],
                    n_decoder_layers=s["layers"],
                    dropout=0.1,
                    max_positions=max(512, seq_len + 1),
                    pad_id=PAD,
                    final_norm=True,  # nn.Transformer's layout
                )
                batch = max(1, s["tokens_per_batch"] // seq_len)
                ours, reference = build_pair(config, device)
                src, tgt = make_batch(batch, seq_len, device, torch.Generator().manual_seed(seq_len))
                difference = max_logit_difference(ours, reference, src, tgt[:, :-1])
                ours.train(), reference.train()
                steps = {"ours": train_step(ours, src, tgt, dtype), "torch": train_step(reference, src, tgt, dtype)}
                ops = {name: sum(n for n, _ in profile_ops(step).values()) for name, step in steps.items()}
                load_before = load_average()
                times = time_many(steps, device, rounds=s["rounds"][d_model], warmup=1)
                load = max(load_before, load_average()) if load_before is not None else None  # the busier moment
                ratio, low, high = paired_ratio(times["ours"], times["torch"])
                dtype_name = str(dtype).removeprefix("torch.")
                row = dict(
                    device=device.type,
                    dtype=dtype_name,
                    d_model=d_model,
                    n_heads=n_heads,
                    d_ff=4 * d_model,
                    layers=s["layers"],
                    seq_len=seq_len,
                    batch=batch,
                    vocab=VOCAB,
                    rounds=s["rounds"][d_model],
                    ours_ms=median_ms(times["ours"]),
                    torch_ms=median_ms(times["torch"]),
                    ratio=round(ratio, 4),
                    ratio_low=round(low, 4),
                    ratio_high=round(high, 4),
                    ours_ops=ops["ours"],
                    torch_ops=ops["torch"],
                    max_abs_logit_diff=difference,
                    load_1min=load,
                )
                print(
                    f"{device.type:>6} {dtype_name:>9} {d_model:>7} {seq_len:>4} {batch:>5} "
                    f"{row['ours_ms']:9.1f} {row['torch_ms']:9.1f} {ratio:6.2f} ({low:.2f}-{high:.2f}) "
                    f"{ops['ours']:>7}/{ops['torch']:<7} {load}",
                    flush=True,
                )
                results.append(row)
    path = write_results(
        "train_step",
        results,
        extra=dict(
            what="one training step (forward, loss, backward, Adam step), ours / torch.nn.Transformer; lower is better",
            goal="ratio <= 1.0",
            quick=args.quick,
        ),
        out_dir=args.out,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
