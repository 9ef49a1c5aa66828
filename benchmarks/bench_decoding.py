"""Greedy decoding with a key/value cache against decoding without one, at 16, 64 and 256 output tokens.

Without a cache, step t runs the decoder over all t tokens generated so far, so producing n tokens costs about
n^2 / 2 decoder positions; with :class:`transformer.DecoderCache` each step feeds only the newest token and reads
the earlier keys and values (and the encoder memory's projections) from the cache, n positions in all. Both paths
encode the source once and generate the same tokens (checked before timing).

The models are untrained, with the EOS logit pushed down so that every row runs to exactly n tokens: the timing
then measures n steps. Two sizes: the book's small model (d_model 64) and the Annotated Transformer's copy-task
size (d_model 512, 8 heads, d_ff 2048), both 2 + 2 layers, a batch of 8 sources of 10 tokens. The two paths
alternate in rounds; the median of the per-round ratios ``uncached / cached`` is the speed-up, with its quartiles
(goal: >= 3x at 64 tokens, for each model: the JSON's ``goal`` says per model whether it was met).

About 4 minutes on 2 cores with one thread (uncached decoding of 256 tokens at d_model 512 alone takes about a minute
per call). Results: ``benchmarks/results/decoding.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median_ms, paired_ratio, parse_args, parser, time_many, write_results  # noqa: E402

from transformer import Transformer  # noqa: E402
from transformer.decoding import greedy_decode  # noqa: E402
from transformer.tokens import EOS_ID  # noqa: E402
from transformer.train.recipes import small_model_config  # noqa: E402
from transformer.train.tasks import random_sequences  # noqa: E402

GOAL_SPEEDUP, GOAL_TOKENS = 3.0, 64
MODELS = {
    "small (d_model 64)": dict(d_model=64, n_heads=4, d_ff=128),
    "annotated-size (d_model 512)": dict(d_model=512, n_heads=8, d_ff=2048),
}


def build_model(sizes: dict, max_len: int) -> Transformer:
    """An untrained model that never says EOS, so that decoding always runs ``max_len`` steps."""
    torch.manual_seed(0)
    model = Transformer(small_model_config(max_positions=max(max_len, 64) + 1, **sizes)).eval()
    with torch.no_grad():
        model.lm_head.bias[EOS_ID] = -1e4
    return model


def main() -> None:
    args = parse_args(parser(__doc__.splitlines()[0]))
    lengths = (4, GOAL_TOKENS) if args.quick else (16, GOAL_TOKENS, 256)
    models = {"small (d_model 64)": MODELS["small (d_model 64)"]} if args.quick else MODELS
    batch, rounds = (2, 2) if args.quick else (8, 5)
    src, _ = random_sequences(batch, min_seq_len=10, max_seq_len=10, rng=torch.Generator().manual_seed(0))  # (B, 10)
    results = []
    for name, sizes in models.items():
        model = build_model(sizes, max(lengths))
        for n in lengths:
            cached = greedy_decode(model, src, n, use_cache=True)
            uncached = greedy_decode(model, src, n, use_cache=False)
            assert cached.shape == (batch, n) and torch.equal(cached, uncached), "cached and uncached tokens differ"
            times = time_many(
                {
                    "cached": lambda m=model, n=n: greedy_decode(m, src, n, use_cache=True),
                    "uncached": lambda m=model, n=n: greedy_decode(m, src, n, use_cache=False),
                },
                rounds=rounds if n <= 64 else min(rounds, 2),
                warmup=1 if n <= 64 else 0,  # the long runs take seconds: no warm-up needed, fewer rounds
                min_time=0.0,
            )
            speedup, low, high = paired_ratio(times["uncached"], times["cached"])
            row = {
                "model": name,
                "d_model": sizes["d_model"],
                "batch": batch,
                "src_len": src.size(1),
                "tokens": n,
                "cached_ms": median_ms(times["cached"]),
                "uncached_ms": median_ms(times["uncached"]),
                "speedup": round(speedup, 2),
                "speedup_low": round(low, 2),
                "speedup_high": round(high, 2),
                "same_tokens": True,
            }
            results.append(row)
            print(
                f"{name:<30} {n:>4} tokens: cached {row['cached_ms']:9.1f} ms, uncached {row['uncached_ms']:9.1f} ms,"
                f" speed-up {speedup:.2f}x ({low:.2f}-{high:.2f})",
                flush=True,
            )
    goal = {
        r["model"]: {
            "tokens": r["tokens"],
            "speedup": r["speedup"],
            "goal": GOAL_SPEEDUP,
            "met": r["speedup"] >= GOAL_SPEEDUP,
        }
        for r in results
        if r["tokens"] == GOAL_TOKENS
    }
    for name, g in goal.items():
        print(
            f"goal >= {GOAL_SPEEDUP:g}x at {GOAL_TOKENS} tokens, {name}: {g['speedup']:.2f}x, "
            f"{'met' if g['met'] else 'NOT met'}"
        )
    path = write_results(
        "decoding",
        results,
        extra={
            "what": __doc__.splitlines()[0],
            "quick": args.quick,
            "goal_speedup": GOAL_SPEEDUP,
            "goal_tokens": GOAL_TOKENS,
            "goal": goal,
        },
        out_dir=args.out,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
