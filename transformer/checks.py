"""Every input check of the package, in one place: each raises a clear error naming the argument, what was expected
and what came.

Public entry points check their inputs; decoding loops that feed the model values valid by construction switch the
repeated checks off with ``input_checks(enabled=False)``. Under ``torch.compile``, ``torch.export``, TorchScript
tracing and ONNX export the checks are off too (:func:`checking_inputs`): they read Python values out of tensors
(the token-id range needs a device -> host copy), which a traced graph cannot hold. Eager calls keep every check.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch
from torch import Tensor

_CHECK_INPUTS: ContextVar[bool] = ContextVar("transformer_check_inputs", default=True)


def tracing() -> bool:
    """Whether the code runs under a graph capture: ``torch.compile`` and ``torch.export`` (and the ONNX exporter
    built on it) set ``is_compiling``, TorchScript tracing (and the legacy ONNX exporter built on it) ``is_tracing``."""
    return torch.compiler.is_compiling() or torch.jit.is_tracing()


@contextmanager
def input_checks(enabled: bool) -> Iterator[None]:
    """Turn the package's input checks (token ids, shapes, masks, devices) on or off inside a block.

    For loops that checked their inputs once and then feed the model only values that stay valid by construction,
    such as the argmax ids of a decoding loop: there every repeated check is pure overhead (and checking token ids
    forces a GPU -> CPU sync). Outside such a block every public entry point checks its inputs.
    """
    token = _CHECK_INPUTS.set(enabled)
    try:
        yield
    finally:
        _CHECK_INPUTS.reset(token)


def checking_inputs() -> bool:
    """Whether input checks are on: they are, unless inside ``input_checks(enabled=False)`` or a graph capture."""
    return not tracing() and _CHECK_INPUTS.get()


# ---- configuration values ------------------------------------------------------------------------------------


def check_int(name: str, value: object, minimum: int, maximum: int | None = None) -> None:
    """Raise a clear error unless ``value`` is an int (not a bool) of at least ``minimum`` (and at most ``maximum``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int; got {type(value).__name__} {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        expected = f"an int >= {minimum}" if maximum is None else f"an int in [{minimum}, {maximum}]"
        raise ValueError(f"{name} must be {expected}; got {value}")


def check_heads(d_model: object, n_heads: object) -> None:
    """Raise a clear error unless ``d_model`` splits evenly into ``n_heads`` heads of ``d_model // n_heads``."""
    check_int("d_model", d_model, minimum=1)
    check_int("n_heads", n_heads, minimum=1)
    if d_model % n_heads != 0:
        raise ValueError(
            f"d_model must be divisible by n_heads so that each head gets d_model // n_heads dimensions; "
            f"got d_model={d_model}, n_heads={n_heads} (remainder {d_model % n_heads})"
        )


def check_bool(name: str, value: object, none_allowed: bool = False) -> None:
    """Raise a ``TypeError`` unless ``value`` is a bool (or ``None``, when ``none_allowed``)."""
    if not isinstance(value, bool) and not (none_allowed and value is None):
        raise TypeError(f"{name} must be {'True, False or None' if none_allowed else 'a bool'}; got {value!r}")


def check_choice(name: str, value: object, choices: tuple) -> None:
    """Raise a clear error unless ``value`` is one of ``choices`` (a task, an activation, a schedule ...)."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}; got {value!r}")


def check_token_id(name: str, value: object, vocab_size: int) -> None:
    """Raise a clear error unless ``value`` is one token id, an int in ``[0, vocab_size)``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int token id; got {type(value).__name__} {value!r}")
    if not 0 <= value < vocab_size:
        raise ValueError(f"{name} must be a token id in [0, {vocab_size}); got {value}")


def check_real(name: str, value: object) -> None:
    """Raise a ``TypeError`` unless ``value`` is an int or float (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number (int or float); got {type(value).__name__} {value!r}")


def check_probability(name: str, value: object) -> None:
    """Raise a clear error unless ``value`` is a number in [0, 1), as a dropout rate must be."""
    check_real(name, value)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1); got {value!r}")


def check_positive(name: str, value: object) -> None:
    """Raise a clear error unless ``value`` is a positive finite number."""
    check_real(name, value)
    if not 0 < value < math.inf:
        raise ValueError(f"{name} must be a positive finite number; got {value!r}")


# ---- tensors ---------------------------------------------------------------------------------------------------


def check_tokens(tokens: object, name: str, vocab_size: int | None = None) -> None:
    """Raise a clear error unless ``tokens`` is a non-empty ``(B, S)`` integer tensor, of ids in ``[0, vocab_size)``
    when ``vocab_size`` is given."""
    if not isinstance(tokens, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids; got {type(tokens).__name__}")
    if tokens.dtype == torch.bool or tokens.is_floating_point() or tokens.is_complex():
        raise TypeError(f"{name} must hold integer token ids (e.g. torch.long); got dtype {tokens.dtype}")
    if tokens.dim() != 2:
        raise ValueError(
            f"{name} must be 2-D (batch, seq_len); got shape {tuple(tokens.shape)}"
            + (" (add a batch dimension with .unsqueeze(0))" if tokens.dim() == 1 else "")
        )
    if tokens.size(0) == 0 or tokens.size(1) == 0:
        raise ValueError(
            f"{name} must have at least one sequence of at least one token; got shape {tuple(tokens.shape)}"
        )
    if vocab_size is None or tokens.device.type == "meta":
        return  # no range to check, or no values to read
    low, high = torch.stack(torch.aminmax(tokens)).tolist()  # one pass over the ids, one device -> host copy
    if low < 0 or high >= vocab_size:
        raise ValueError(f"{name} holds ids outside the vocabulary [0, {vocab_size}): min {low}, max {high}")


def check_lengths(lengths: object, width: int | None) -> None:
    """Raise a clear error unless ``lengths`` is a 1-D tensor of lengths >= 0, none longer than ``width`` (if given)."""
    if not isinstance(lengths, Tensor) or lengths.dim() != 1:
        got = f"shape {tuple(lengths.shape)}" if isinstance(lengths, Tensor) else type(lengths).__name__
        raise ValueError(f"lengths must be a 1-D tensor (batch,); got {got}")
    if lengths.numel() and int(lengths.min()) < 0:
        raise ValueError(f"lengths must be >= 0; got min {int(lengths.min())}")
    if width is not None and lengths.numel() and width < int(lengths.max()):
        raise ValueError(f"width must be >= the longest length {int(lengths.max())}; got {width}")


def check_device(x: object, name: str, device: torch.device) -> None:
    """Raise a clear error unless tensor ``x`` lives on ``device`` (the device of the module's weights)."""
    if isinstance(x, Tensor) and x.device != device:
        raise RuntimeError(
            f"{name} is on {x.device} but the model's weights are on {device}; "
            f"move the input with .to({str(device)!r}) (or the model with .to({str(x.device)!r}))"
        )


def require_bool_mask(mask: object, name: str, *, dims: int | None = None, bool_only: bool = True) -> None:
    """Raise a clear error unless ``mask`` is a bool tensor, this package's one mask type (``True`` = may attend), with
    ``dims`` dimensions when given; with ``bool_only=False``, any tensor (PyTorch's and Hugging Face's masks)."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor; got {type(mask).__name__}")
    if bool_only and mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must be a bool tensor (True = may attend); got dtype {mask.dtype}. "
            "Convert PyTorch-style masks with from_torch_mask and 0/1 masks with .bool()"
        )
    if dims is not None and mask.dim() != dims:
        raise ValueError(f"{name} must be {dims}-D; got shape {tuple(mask.shape)}")


def check_padding_mask(mask: object, name: str) -> None:
    """Raise a clear error unless ``mask`` is a bool padding mask of shape ``(B, 1, 1, S)``."""
    require_bool_mask(mask, name)
    if mask.dim() != 4 or mask.size(1) != 1 or mask.size(2) != 1:
        raise ValueError(f"{name} must be a padding mask of shape (B, 1, 1, S); got shape {tuple(mask.shape)}")


def check_mask(mask: Tensor, name: str, batch: int, q_len: int, k_len: int, *, heads: int) -> None:
    """Raise a clear error unless ``mask`` is a bool tensor broadcastable to ``(batch, heads, q_len, k_len)``:
    4-D, with each of its first three sizes either 1 or the full size, and exactly ``k_len`` keys."""
    require_bool_mask(mask, name)
    if mask.dim() != 4:
        raise ValueError(
            f"{name} must be 4-D, broadcastable to (batch, heads, q_len, k_len) = ({batch}, H, {q_len}, {k_len}); "
            f"got shape {tuple(mask.shape)}"
        )
    b, h, q, k = mask.shape
    if b not in (1, batch) or h not in (1, heads) or q not in (1, q_len) or k != k_len:
        heads_note = f"; its size {h} at dimension 1 must be 1 or n_heads={heads}" if h not in (1, heads) else ""
        raise ValueError(
            f"{name} has shape {tuple(mask.shape)}, which does not broadcast to "
            f"(batch, heads, q_len, k_len) = ({batch}, H, {q_len}, {k_len}){heads_note}"
        )


def check_length(name: str, length: int, max_positions: int) -> None:
    """Raise a clear error, naming the input, if ``length`` positions do not fit a positional table of
    ``max_positions`` rows (the model's ``config.max_positions``)."""
    if length > max_positions:
        raise ValueError(
            f"{name} needs {length} positions, more than the positional table holds: max_positions={max_positions}; "
            "shorten it, or build the model with a larger max_positions"
        )


def check_attention_inputs(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> None:
    """Shapes and mask type of :func:`scaled_dot_product_attention`, checked on shapes alone (no data is read)."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, Tensor) or x.dim() < 2:
            got = f"shape {tuple(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(
                f"{name} must be a tensor of shape (..., seq_len, d_k) with at least 2 dimensions; got {got}"
            )
    if q.size(-1) != k.size(-1):
        raise ValueError(
            f"q and k must have the same last dimension d_k; got q {tuple(q.shape)} and k {tuple(k.shape)}"
        )
    if k.size(-2) != v.size(-2):
        raise ValueError(
            f"k and v must have the same number of keys T_k; got k {tuple(k.shape)} and v {tuple(v.shape)}"
        )
    batch = _broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if batch is None:
        raise ValueError(
            "the leading (batch, heads, ...) dimensions of q, k and v must broadcast; "
            f"got q {tuple(q.shape)}, k {tuple(k.shape)} and v {tuple(v.shape)}"
        )
    if mask is not None:
        require_bool_mask(mask, "mask")
        scores = (*batch, q.size(-2), k.size(-2))
        if _broadcast_shapes(mask.shape, scores) != scores:
            raise ValueError(
                f"mask has shape {tuple(mask.shape)}, which does not broadcast to the scores (..., T_q, T_k) = {scores}"
            )


def _broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape that ``shapes`` broadcast to (NumPy rules), or ``None`` if they do not (``torch.broadcast_shapes``
    does the same, but is slower than the attention it would guard)."""
    ndim = max(len(shape) for shape in shapes)
    result = []
    for sizes in zip(*((1,) * (ndim - len(shape)) + tuple(shape) for shape in shapes), strict=True):
        different = set(sizes) - {1}
        if len(different) > 1:
            return None
        result.append(different.pop() if different else 1)
    return tuple(result)


def check_attention_module_inputs(query: Tensor, key: Tensor, value: Tensor, d_model: int) -> None:
    """Raise a clear error unless ``query``, ``key`` and ``value`` are ``(batch, seq_len, d_model)`` sequences whose
    batch sizes agree, as :class:`~transformer.MultiHeadAttention` takes them."""
    for name, x in (("query", query), ("key", key), ("value", value)):
        if not isinstance(x, Tensor) or x.dim() != 3 or x.size(-1) != d_model:
            got = f"shape {tuple(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"{name} must have shape (batch, seq_len, d_model={d_model}); got {got}")
    if key.shape[:2] != value.shape[:2]:
        raise ValueError(f"key and value must share (batch, seq_len); got {tuple(key.shape)} and {tuple(value.shape)}")
    if query.size(0) != key.size(0):
        raise ValueError(f"query and key must have the same batch size; got {query.size(0)} and {key.size(0)}")


def check_decoder_inputs(
    y: Tensor, memory: Tensor, src_mask: Tensor | None, tgt_mask: Tensor | None, past: int, *, heads: int
) -> None:
    """Raise a clear error unless the decoder stack's inputs fit together: ``y (B, T, d_model)`` after ``past``
    cached positions, ``memory (B, S, d_model)``, and masks broadcastable to ``(B, H, T, S)`` and ``(B, H, T,
    past + T)``."""
    if not isinstance(y, Tensor) or y.dim() != 3:
        got = tuple(y.shape) if isinstance(y, Tensor) else type(y).__name__
        raise ValueError(f"y must be the embedded target, of shape (batch, tgt_len, d_model); got {got}")
    B, T, d_model = y.shape
    if not isinstance(memory, Tensor) or memory.dim() != 3 or memory.size(0) != B or memory.size(2) != d_model:
        got = tuple(memory.shape) if isinstance(memory, Tensor) else type(memory).__name__
        raise ValueError(f"memory must have shape (batch={B}, src_len, d_model={d_model}); got {got}")
    if src_mask is not None:
        check_mask(src_mask, "src_mask", B, T, memory.size(1), heads=heads)
    if tgt_mask is not None:
        check_mask(tgt_mask, "tgt_mask", B, T, past + T, heads=heads)
