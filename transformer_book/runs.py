"""Trained runs kept on disk, so that a chapter which needs a model that an earlier chapter trained with the same
settings loads it instead of training it again: "load the checkpoint if it exists, else train", keyed so that what
it loads is always what training would give.

    model, history = trained(train_task, "copy", TrainConfig(eval_every=50), RunConfig(seed=0, device="cpu"))

The first call runs ``train_task(...)`` and saves the trained model (its configuration and weights, with
:func:`transformer.save_checkpoint`) and its :class:`~transformer.train.History` in one file; a later call with the
same key loads them, on the device and in the mode a fresh run leaves the model in, and says so in one line. The key
is a hash of everything that decides the result: the function's qualified name, its arguments (all but
``progress``; data by content, however large), the source of the ``transformer`` package (an edit trains again), the
PyTorch version and where it trains (the device "auto" picks, its CPU instructions or GPU model). Training is
deterministic given these (:func:`transformer.utils.seeded`), so a loaded run is the run.

The files go to ``TRANSFORMER_BOOK_RUNS`` if set, else ``$XDG_CACHE_HOME/transformer-interactive/runs`` (by default
``~/.cache/...``); delete a file, or the folder, to train again. Writes are atomic, and two processes that need the
same run at once (two notebooks) train it once: the second waits for the first and loads its file.

A file's name is the key in two parts, ``<settings>-<where>.pt``: what the run is (the function, its arguments, the
package's source) and where it trained (PyTorch's version, the machine). ``TRANSFORMER_BOOK_RUNS_FROM``, a folder of
runs trained elsewhere, is looked in first: a run there with the same settings, under any PyTorch and on any machine
(the first trained, when there are several), is loaded, and the message names its PyTorch. The same model to within
rounding, where training again would only repeat what that run showed: the book's tests run the Chinese chapters at
Colab's versions that way, on the models the English chapters trained.

:func:`kept` does the same for a study that returns results, not a model: numbers, strings, lists, tuples, dicts and
the package's and the book kit's dataclasses (a :class:`History`, a regularisation run), such as the runs a figure
compares.

    runs = kept(regularisation_runs, "copy", n_train=192, seeds=(0, 1, 2), steps=250, device="cpu")
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import fractions
import hashlib
import importlib
import inspect
import os
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePath

import torch

import transformer
from transformer import Transformer, load_checkpoint, save_checkpoint
from transformer.checkpoint import atomic_save, read_checkpoint
from transformer.train import History
from transformer.utils import seeded, select_device

from .i18n import tr, translatable
from .results import file_digest

__all__ = ["FROM_ENV", "RUNS_ENV", "kept", "run_key", "run_path", "runs_folder", "trained"]

RUNS_ENV = "TRANSFORMER_BOOK_RUNS"
FROM_ENV = "TRANSFORMER_BOOK_RUNS_FROM"  # a folder of runs trained elsewhere, loaded first where their settings match
FORMAT = "transformer-book/run-v2"  # part of every key: files of another layout are never read
RESULTS_FORMAT = "transformer-book/results-v1"  # what a file that kept() wrote says it is
# where the classes of kept results come from: nothing else is imported when a file is read
RESULT_PACKAGES = ("transformer", "transformer_book")
NOT_IN_KEY = ("progress",)  # how a run is shown, not what it learns
# what the message calls a model: a task's name, or the function's without "train_" (shown through tr(name))
RUN_NAMES = (
    translatable("copy"),
    translatable("reverse"),
    translatable("sort"),
    translatable("dates"),
    translatable("translation"),
)


def trained(train_fn: Callable, *args, retrain: bool = False, **kwargs) -> tuple[torch.nn.Module, History]:
    """``train_fn(*args, **kwargs)``, a function that returns ``(model, history)`` such as
    :func:`~transformer.train.train_task`, trained once: the run is saved under its key (:func:`run_key`), and a
    later call with the same key loads it and says so. ``retrain=True`` trains even when the run is saved, and saves
    this one."""
    if not callable(train_fn):
        raise TypeError(f"train_fn must be a function that trains and returns (model, history); got {train_fn!r}")
    if not isinstance(retrain, bool):
        raise TypeError(f"retrain must be True or False; got {retrain!r}")
    path = run_path(train_fn, *args, **kwargs)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _only_one_trainer(path):
        kept = None if retrain else _kept_run(path)
        if kept is not None:
            model, history, trained_with = _load(kept)
            name, shown = _run_name(train_fn, *args, **kwargs), _shown(kept)
            if kept == path:
                said = tr(
                    "loaded the {name} model trained earlier with these settings ({path}; delete it to train again)",
                    name=name,
                    path=shown,
                )
            else:  # from TRANSFORMER_BOOK_RUNS_FROM
                said = tr(
                    "loaded the {name} model trained earlier with these settings under PyTorch {torch} ({path}; "
                    "delete it to train again)",
                    name=name,
                    torch=trained_with,
                    path=shown,
                )
            print(said)
            return model, history
        model, history = train_fn(*args, **kwargs)
        _check_result(train_fn, model, history)
        save_checkpoint(
            model,
            path,
            history=history.to_dict(),
            training=model.training,
            device=str(next(model.parameters()).device),
            call=_qualified_name(train_fn),
            model_class=_qualified_name(type(model)),
            config_class=_qualified_name(type(model.config)),
            torch=str(torch.__version__),  # a TorchVersion is no plain str to torch.load(weights_only=True)
        )
    return model, history


def kept(study_fn: Callable, *args, **kwargs) -> object:
    """``study_fn(*args, **kwargs)``, computed once: its result is saved under the key :func:`trained` would give
    it (its arguments, the package's source, PyTorch and the machine; ``TRANSFORMER_BOOK_RUNS_FROM`` is looked in
    first the same way), and a later call with the same key loads it and says so. The result must be made of
    numbers, strings, ``None``, lists, tuples, dicts and dataclasses of the ``transformer`` package or the book kit,
    such as the :class:`History` of every run of a study."""
    if not callable(study_fn):
        raise TypeError(f"study_fn must be a function that returns results; got {study_fn!r}")
    path = run_path(study_fn, *args, **kwargs)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _only_one_trainer(path):
        found = _kept_run(path)
        if found is not None:
            saved = torch.load(found, map_location="cpu", weights_only=True)
            if saved.get("format") != RESULTS_FORMAT:
                raise ValueError(f"{found} holds no results that kept() saved (format {saved.get('format')!r})")
            if found == path:
                said = tr(
                    "loaded the results computed earlier with these settings ({path}; delete it to compute them again)",
                    path=_shown(found),
                )
            else:
                said = tr(
                    "loaded the results computed earlier with these settings under PyTorch {torch} ({path}; "
                    "delete it to compute them again)",
                    torch=saved["torch"],
                    path=_shown(found),
                )
            print(said)
            return _rebuilt(saved["results"], found)
        results = study_fn(*args, **kwargs)
        plain = _plain(results, "results")  # before saving: a result that cannot be kept fails here, not when loaded
        atomic_save(
            {
                "format": RESULTS_FORMAT,
                "call": _qualified_name(study_fn),
                "torch": str(torch.__version__),
                "results": plain,
            },
            path,
        )
    return results


def _plain(value: object, where: str) -> object:
    """``value`` as what ``torch.load(weights_only=True)`` reads back: plain values, lists and dicts, each tuple, dict
    and dataclass marked as what it was; ``where`` names the value in an error (``"results['dropout'][2]"``)."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, list):
        return [_plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, tuple):
        return {"tuple": [_plain(item, f"{where}[{i}]") for i, item in enumerate(value)]}
    if isinstance(value, dict):
        return {
            "dict": [
                [_plain(key, f"{where} key {key!r}"), _plain(item, f"{where}[{key!r}]")] for key, item in value.items()
            ]
        }
    kind = type(value)
    if dataclasses.is_dataclass(value) and kind.__module__.split(".")[0] in RESULT_PACKAGES:
        fields = {
            field.name: _plain(getattr(value, field.name), f"{where}.{field.name}")
            for field in dataclasses.fields(value)
        }
        return {"dataclass": _qualified_name(kind), "fields": fields}
    raise TypeError(
        f"{where} is a {kind.__module__}.{kind.__qualname__}, which kept() cannot keep: results must be numbers, "
        f"strings, None, lists, tuples, dicts and dataclasses of {' or '.join(RESULT_PACKAGES)}"
    )


def _rebuilt(value: object, file: Path) -> object:
    """What :func:`_plain` was given, read from ``file`` (named in an error)."""
    if isinstance(value, list):
        return [_rebuilt(item, file) for item in value]
    if not isinstance(value, dict):
        return value
    if "tuple" in value:
        return tuple(_rebuilt(item, file) for item in value["tuple"])
    if "dict" in value:
        return {_rebuilt(key, file): _rebuilt(item, file) for key, item in value["dict"]}
    name = value["dataclass"]
    if name.split(".")[0] not in RESULT_PACKAGES:
        raise ValueError(f"{file} names the class {name}, outside {' and '.join(RESULT_PACKAGES)}: not loaded")
    kind = _imported(name)
    return kind(**{field: _rebuilt(item, file) for field, item in value["fields"].items()})


def run_path(train_fn: Callable, *args, **kwargs) -> Path:
    """The file that holds the run of ``train_fn(*args, **kwargs)``: :func:`run_key` in :func:`runs_folder`."""
    return runs_folder() / f"{run_key(train_fn, *args, **kwargs)}.pt"


def runs_folder() -> Path:
    """``TRANSFORMER_BOOK_RUNS`` if set, else ``transformer-interactive/runs`` in the user's cache folder
    (``XDG_CACHE_HOME`` if set to an absolute path, else ``~/.cache``)."""
    chosen = os.environ.get(RUNS_ENV, "").strip()
    if chosen:
        return Path(chosen).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(cache) if os.path.isabs(cache) else Path.home() / ".cache"
    return root / "transformer-interactive" / "runs"


def run_key(train_fn: Callable, *args, **kwargs) -> str:
    """``<settings>-<where>``, which changes whenever the run of ``train_fn(*args, **kwargs)`` could: 16 hex digits of
    the function, its arguments as it binds them (defaults filled in, ``progress`` left out) and the ``transformer``
    package's source, then 8 of the PyTorch version and the machine it trains on (:func:`_machine`). Equal on every
    process and machine where these are."""
    return f"{_settings_key(train_fn, *args, **kwargs)}-{_where_key()}"


def _where_key() -> str:
    return hashlib.sha256(f"{torch.__version__}\0{_machine()}".encode()).hexdigest()[:8]


def _settings_key(train_fn: Callable, *args, **kwargs) -> str:
    try:
        bound = inspect.signature(train_fn).bind(*args, **kwargs)
    except TypeError as error:
        raise TypeError(f"{_qualified_name(train_fn)} cannot be called with these arguments: {error}") from None
    bound.apply_defaults()
    digest = hashlib.sha256()
    for part in (FORMAT, _function_identity(train_fn), package_source()):
        digest.update(f"{part}\0".encode())
    for name, value in bound.arguments.items():
        if name not in NOT_IN_KEY:
            digest.update(f"{name}=".encode())
            _feed(digest, value, name)
    return digest.hexdigest()[:16]


def package_source() -> str:
    """A digest of every ``.py`` file of the ``transformer`` package (its paths and text, line endings normalised)."""
    return _source_digest(Path(transformer.__file__).parent)


def kit_source() -> str:
    """The same digest of the book kit, ``transformer_book``: a kit function may call any other."""
    return _source_digest(Path(__file__).parent)


def _source_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(f"{path.relative_to(root).as_posix()}\0{file_digest(path)}\0".encode())
    return digest.hexdigest()


def _machine() -> str:
    """Where a run trains, as far as its numbers can depend on it: the device "auto" picks (a run names its own in
    its arguments), the CPU instructions PyTorch uses, and the GPU's model."""
    device = select_device("auto")
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else ""
    return f"{device.type} {torch.backends.cpu.get_cpu_capability()} {gpu}"


def _feed(digest: hashlib._Hash, value: object, where: str) -> None:
    """Add a canonical form of ``value`` to ``digest``: the same for equal values in any process (no ``id()``, no
    memory address, no hash seed); ``where`` names the value in an error (``"data.train[3]"``)."""
    kind = type(value)
    digest.update(f"<{kind.__module__}.{kind.__qualname__}>".encode())
    if isinstance(value, enum.Enum):
        digest.update(value.name.encode())
    elif value is None or isinstance(
        value, (bool, int, float, complex, str, bytes, decimal.Decimal, fractions.Fraction)
    ):
        digest.update(repr(value).encode())  # repr keeps every bit of a float
    elif isinstance(value, (datetime.date, datetime.time, datetime.timedelta, PurePath)):
        digest.update(str(value).encode())
    elif isinstance(value, torch.Tensor):
        flat = value.detach().cpu().reshape(-1).contiguous()
        digest.update(f"{value.dtype}{tuple(value.shape)}".encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes())
    elif isinstance(value, torch.nn.Module):
        raise TypeError(
            f"{where} is a {kind.__name__}: trained() keeps runs whose function builds its own model (a model passed "
            "in is trained in place, which loading a saved run would not do); leave it out"
        )
    elif isinstance(value, (list, tuple)):
        digest.update(f"{len(value)}[".encode())
        for i, item in enumerate(value):
            _feed(digest, item, f"{where}[{i}]")
    elif isinstance(value, (dict, set, frozenset)):  # equal however they were filled: their parts in sorted order
        items = value.items() if isinstance(value, dict) else ((item, None) for item in value)
        parts = []
        for key, item in items:
            part = hashlib.sha256()
            _feed(part, key, f"{where} key {key!r}")
            _feed(part, item, f"{where}[{key!r}]")
            parts.append(part.digest())
        digest.update(f"{len(parts)}{{".encode() + b"".join(sorted(parts)))
    elif dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            digest.update(f"{field.name}=".encode())
            _feed(digest, getattr(value, field.name), f"{where}.{field.name}")
    elif isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
        digest.update(_function_identity(value, where).encode())
    else:  # any other object by what pickling it would keep, e.g. a vocabulary's tokens (Python 3.10: its __dict__)
        state = value.__getstate__() if hasattr(value, "__getstate__") else getattr(value, "__dict__", None)
        if not state:
            raise TypeError(
                f"{where} is a {kind.__name__}, whose value trained() cannot read to make a key (no dataclass "
                "fields, no state to pickle); pass plain values, dataclasses or tensors"
            )
        _feed(digest, state, f"{where}.__getstate__()")


def _function_identity(fn: Callable, where: str = "train_fn") -> str:
    """A function's qualified name and, for one outside the ``transformer`` package (whose source is in every key
    already), the book kit's source for one of the kit, else its own source, so that editing a function defined in a
    notebook, or any of the kit, trains again."""
    name = _qualified_name(fn)
    if "<lambda>" in name or "<locals>" in name:
        raise TypeError(f"{where} must be a function defined at the top level of a module or notebook; got {name}")
    package = name.split(".")[0]
    if package == "transformer" or not isinstance(fn, types.FunctionType):
        return name
    if package == "transformer_book":
        return f"{name}\0{kit_source()}"
    try:
        return f"{name}\0{inspect.getsource(fn)}"
    except OSError:
        raise TypeError(f"{where} ({name}) has no source to read, and a change to it would go unseen") from None


def _qualified_name(fn: Callable) -> str:
    return f"{getattr(fn, '__module__', None)}.{getattr(fn, '__qualname__', type(fn).__qualname__)}"


def _check_result(train_fn: Callable, model: object, history: object) -> None:
    """A run must be a model built from its configuration alone (``model_class(config)``, such as the package's
    :class:`~transformer.Transformer` or the book kit's GPT and BERT) and a :class:`History`."""
    config = getattr(model, "config", None)
    if not isinstance(model, torch.nn.Module) or not hasattr(config, "to_dict") or not isinstance(history, History):
        raise TypeError(
            f"{_qualified_name(train_fn)} must return (model, History), a model with a config that has to_dict() "
            f"(a Transformer); got ({type(model).__name__}, {type(history).__name__})"
        )


def _kept_run(path: Path) -> Path | None:
    """The saved run to load instead of training the run of ``path``: the first trained (the oldest file) of the runs
    with its settings in ``TRANSFORMER_BOOK_RUNS_FROM``, wherever they trained, else ``path`` itself; None when there
    is neither."""
    elsewhere = os.environ.get(FROM_ENV, "").strip()
    if elsewhere:
        settings = path.name.split("-")[0]
        found = sorted(
            Path(elsewhere).expanduser().glob(f"{settings}-*.pt"), key=lambda p: (p.stat().st_mtime_ns, p.name)
        )
        if found:
            return found[0]
    return path if path.is_file() else None


def _load(path: Path) -> tuple[torch.nn.Module, History, str]:
    """The saved run: its model on the device it trained on, in the mode training left it in, its history, and the
    PyTorch version it trained under. The global random generators are left as they were (building a model draws
    initial weights from them)."""
    checkpoint = read_checkpoint(path)
    metadata = checkpoint["metadata"]
    with seeded(0):
        if metadata["model_class"] == _qualified_name(Transformer):
            model = load_checkpoint(path, metadata["device"])
        else:  # a model of the book kit: built from its configuration, then given the saved weights
            config_class, model_class = (_imported(metadata[name]) for name in ("config_class", "model_class"))
            model = model_class(config_class(**checkpoint["config"]))
            model.load_state_dict(checkpoint["state_dict"])
            model.to(metadata["device"])
    return model.train(metadata["training"]), History(**metadata["history"]), metadata["torch"]


def _imported(qualified_name: str) -> type:
    """The class a qualified name (``module.Class``) names."""
    module, _, name = qualified_name.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _run_name(train_fn: Callable, *args, **kwargs) -> str:
    """What the message calls the model: its task (``train_task("copy")``: copy), else the function's name without
    ``train_`` (``train_dates``: dates), in the reader's language."""
    first = next(iter(inspect.signature(train_fn).bind(*args, **kwargs).arguments.values()), None)
    task = first if isinstance(first, str) else getattr(first, "task", None)
    name = task if isinstance(task, str) else getattr(train_fn, "__name__", "").removeprefix("train_")
    return tr(name) if name in RUN_NAMES else name


def _shown(path: Path) -> str:
    """``path`` with the home folder written ``~``."""
    home = Path.home()
    return f"~/{path.relative_to(home).as_posix()}" if path.is_relative_to(home) else str(path)


@contextmanager
def _only_one_trainer(path: Path) -> Iterator[None]:
    """Hold a lock on ``path``'s run while inside: a process that needs the same run waits, then finds it saved.
    (Where the system has no ``fcntl``, on Windows, two processes may both train it; the writes stay atomic.)"""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path.with_suffix(".lock"), "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(tr("waiting for another process that is training the same model ({path})", path=_shown(path)))
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
