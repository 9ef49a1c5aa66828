"""A second device for tests on a machine that has only a CPU.

The book's readers run models on a GPU and make their inputs on the CPU; CI has no GPU. This module simulates the
one thing that matters for that: tensors on two devices that refuse to meet. An :class:`Elsewhere` tensor holds
ordinary CPU data but reports ``device == meta``, and inside ``with another_device():``

- an operation that mixes it with a (non-scalar) plain CPU tensor raises PyTorch's "Expected all tensors to be on
  the same device", as a CUDA tensor meeting a CPU one does;
- ``.numpy()`` and ``numpy.asarray`` refuse it, as they refuse a CUDA tensor, and float64 is refused on it, as
  Apple's MPS refuses it;
- ``.to("cpu")`` and ``.cpu()`` bring it back as a plain CPU tensor; ``.to("meta")``, ``.to(elsewhere_tensor)`` and
  factories called with ``device=meta`` (``torch.zeros(..., device=x.device)``) put a tensor there;
- :func:`put_elsewhere` moves a model's weights there, like ``model.to("cuda")``.

So code that forgets to move its inputs to the model's device, or to bring results back before numpy, fails here
as it would on a GPU; values are computed on the CPU and can be compared exactly with a plain run.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves, tree_map

from transformer import Transformer
from transformer.train.recipes import small_model_config
from transformer.train.tasks import task_batch

ELSEWHERE = torch.device("meta")  # the name the simulated device goes by; its tensors keep their CPU data


class Elsewhere(Tensor):
    """A tensor on the simulated device: real CPU data that reports ``device == meta``."""

    __torch_function__ = torch._C._disabled_torch_function_impl

    @property
    def device(self) -> torch.device:
        return ELSEWHERE


def _is_elsewhere(device) -> bool:
    return device is not None and torch.device(device) == ELSEWHERE


class another_device(TorchFunctionMode):
    """Inside ``with another_device():``, ``Elsewhere`` tensors behave as tensors on a second device do in PyTorch:
    an operation that mixes them with (non-scalar) CPU tensors raises PyTorch's "Expected all tensors to be on the
    same device", ``.numpy()`` refuses them, ``.to("cpu")`` / ``.cpu()`` bring them back as plain tensors, and
    ``.to(meta)`` or ``device=meta`` in a factory puts a tensor there."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        tensors = [x for x in tree_leaves((args, kwargs)) if isinstance(x, Tensor)]
        away = any(isinstance(x, Elsewhere) for x in tensors)
        plain = tree_map(lambda x: x.as_subclass(Tensor) if isinstance(x, Elsewhere) else x, (args, kwargs))
        if func in (Tensor.numpy, Tensor.__array__) and away:
            raise TypeError("can't convert a tensor on another device to numpy. Use Tensor.cpu() first")
        if away and (func is Tensor.double or (func is Tensor.to and torch.float64 in tree_leaves((args, kwargs)))):
            raise TypeError(
                "Cannot convert a tensor on another device to float64 (as on MPS): copy it to the CPU first"
            )
        if func in (Tensor.to, Tensor.cpu):
            if func is Tensor.cpu:
                device, dtype = torch.device("cpu"), None
            elif len(args) > 1 and isinstance(args[1], Tensor):
                device, dtype = args[1].device, args[1].dtype
            else:
                device, dtype = torch._C._nn._parse_to(*plain[0][1:], **plain[1])[:2]
            moved = plain[0][0] if dtype is None else plain[0][0].to(dtype)
            if _is_elsewhere(device) or (device is None and away):
                return moved.as_subclass(Elsewhere)
            return moved.clone() if away and moved is plain[0][0] else moved
        if _is_elsewhere(kwargs.get("device")):  # a factory asked for the other device
            plain[1]["device"] = "cpu"
            away = True
        elif away and any(not isinstance(x, Elsewhere) and x.dim() > 0 for x in tensors):
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, meta and cpu! "
                f"({getattr(func, '__name__', func)})"
            )
        result = func(*plain[0], **plain[1])
        return tree_map(lambda x: x.as_subclass(Elsewhere) if isinstance(x, Tensor) else x, result) if away else result


def put_elsewhere(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` with every parameter and buffer on the simulated device, ties kept: ``model.to("cuda")`` for a
    machine without a GPU (the weights become plain tensors there, enough for inference)."""
    moved: dict[int, Tensor] = {}
    for module in model.modules():
        for store in (module._parameters, module._buffers):
            for name, tensor in list(store.items()):
                if tensor is not None:
                    store[name] = moved.setdefault(id(tensor), tensor.detach().as_subclass(Elsewhere))
    return model


def cpu_model(weights) -> Transformer:
    model = Transformer(small_model_config()).eval()
    model.load_state_dict(weights)
    return model


def elsewhere_model(weights) -> Transformer:
    return put_elsewhere(cpu_model(weights))


def batch(n: int = 6):
    return task_batch("copy", n, rng=torch.Generator().manual_seed(5))


def plain(x: torch.Tensor) -> bool:
    """A plain CPU tensor: what a figure or a print can use."""
    return type(x) is torch.Tensor and x.device.type == "cpu"
