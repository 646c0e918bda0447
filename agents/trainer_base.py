"""One trainer base for the trainers in ``agents``: the run folder written once, and the update step on ``accelerate``.

Why one base: the steering trainer and the ACTGUIDE-RL trainer each wrote their own run folder (fingerprint, refusal
of a different config, atomic checkpoints, resume, log, progress) and their own backward pass. Both now share
:class:`RunFolder` and :class:`TrainerBase`, so a fix to resuming or to the update reaches both.

What the base owns

* :class:`RunFolder`: ``config.json`` (config, fingerprint and the steer-envs version that wrote the folder; a
  different config is refused with the keys that differ, a folder of another release line with both versions and
  what to do, see :func:`check_run_version`), ``log.jsonl`` (one row per round/iteration, appended and fsync'ed;
  truncated to the checkpointed rows on resume), atomic writes of checkpoints and JSON cards (a kill mid-write
  leaves the previous file).
* :class:`TrainerBase`: an :class:`accelerate.Accelerator` for device placement (``device``), ``mixed_precision``
  (``"no"`` | ``"bf16"``: autocast around the loss), gradient accumulation over micro-batches (``micro_batch``
  units per backward pass, each loss scaled by its share of the batch, then one optimiser step: the same gradient
  as the full batch) and data parallelism over processes: every process computes the same rollouts (they are
  seeded), takes its share of the micro-batches (``split_between_processes``), and the summed gradients are
  all-reduced (``accelerator.reduce``) before every process takes the same optimiser step. Only the main process
  writes the run folder.

The acceleration fields (in ``SteeringConfig`` and ``ActGuideConfig``) and their defaults:

* ``device = "cpu"`` (``"cpu"`` | ``"cuda"`` | ``"auto"``: accelerate's choice, the local GPU of each process);
* ``mixed_precision = "no"`` (``"no"`` | ``"bf16"``);
* ``micro_batch = 0`` (units per backward pass: steering states, ACTGUIDE-RL trajectory steps; 0 = the whole batch
  in one pass, or an equal share per process when several run).

Multi-GPU / multi-process (data parallel, gradients all-reduced; the model is not wrapped, so every process holds a
full copy: DDP's memory profile)::

    # one node, 8 GPUs (device = "auto" in the config; each process takes its local GPU)
    accelerate launch --multi_gpu --num_processes 8 -m steer_envs.cli.main train steering --config run.toml --out runs/s
    accelerate launch --multi_gpu --num_processes 8 -m steer_envs.cli.main train actguide --config run.toml --out runs/a
    # two CPU processes (gloo; device = "cpu"): on a machine without GPUs --multi_gpu starts them through torchrun.
    # `--cpu` alone starts a single process unless an MPI hostfile is given (accelerate's simple launcher)
    accelerate launch --multi_gpu --num_processes 2 -m steer_envs.cli.main train steering --config run.toml --out runs/s

Experiment tracking (``log_with``, off by default): accelerate's trackers (TensorBoard, W&B, trackio, Aim, MLflow,
Comet, ... whichever accelerate supports and is installed) receive the numbers of every ``log.jsonl`` row, with
step = the round/iteration, beside the log (which stays the record a run resumes from). Their files go under
``<run>/trackers/``. accelerate starts them on the main process only (``init_trackers``); the trainer ends them
(``end_training``) when it finishes or fails. ``log_with`` is the one field a fingerprint leaves out
(:data:`UNHASHED_FIELDS`): it changes what is recorded about a run, not the run, so a folder resumes with tracking
switched on or off.

``accelerate config`` writes accelerate's own config file, which ``accelerate launch`` reads (process count, mixed
precision); the trainer's ``mixed_precision`` field must then agree with it. FSDP / DeepSpeed sharding is not
supported: the steerers and learners are trained through their own methods (``fast_scores``, ``slow_logprobs``,
``token_logprobs``), not through a wrapped ``forward``. Rollouts are replicated in every process (seeded, so
identical): the processes share the update's compute, not the rollouts'.
"""

from __future__ import annotations

import json
import numbers
import os
import sys
from collections.abc import Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import torch

from steer_envs import __version__
from steer_envs.atomic import atomic_write_json
from steer_envs.errors import SteerEnvsError

from .configio import UNHASHED_FIELDS
from .steering.checkpoint import (
    append_jsonl,
    atomic_torch_save,
    load_checkpoint,
    read_jsonl,
    save_checkpoint,
    truncate_jsonl,
)

CONFIG_FILE = "config.json"
LOG_FILE = "log.jsonl"
#: the experiment trackers' folder inside a run folder (accelerate's ``project_dir``)
TRACKERS_DIR = "trackers"

DEVICES = ("cpu", "cuda", "auto")
MIXED_PRECISIONS = ("no", "bf16")
#: the acceleration fields every trainer config carries
ACCELERATION_FIELDS = ("device", "mixed_precision", "micro_batch")
#: the key of ``config.json`` that records the steer-envs version that wrote the run folder
VERSION_KEY = "steer_envs_version"
#: the package (pip name) each of accelerate's trackers needs, named when it is missing
TRACKER_PACKAGES = {
    "tensorboard": "tensorboard",
    "wandb": "wandb",
    "trackio": "trackio",
    "aim": "aim",
    "comet_ml": "comet-ml",
    "mlflow": "mlflow",
    "clearml": "clearml",
    "dvclive": "dvclive",
    "swanlab": "swanlab",
}


def acceleration_checks(config: Any) -> list[tuple[bool, str]]:
    """The validity checks of the acceleration fields (for a config's ``__post_init__``)."""
    return [
        (config.device in DEVICES, f"device must be one of {DEVICES} (got {config.device!r})"),
        (
            config.mixed_precision in MIXED_PRECISIONS,
            f"mixed_precision must be one of {MIXED_PRECISIONS} (got {config.mixed_precision!r})",
        ),
        (
            isinstance(config.micro_batch, int) and config.micro_batch >= 0,
            "micro_batch must be an integer >= 0 (0 = the whole batch in one backward pass)",
        ),
    ]


def tracker_names(value: Any) -> tuple[str, ...]:
    """``log_with`` as a tuple of tracker names. Why several forms: a TOML/JSON list, one name or a comma-separated
    string (``"tensorboard,wandb"``, the CLI's form), and ``None``/``"none"`` (off) all mean what they say."""
    if value is None:
        return ()
    items = str(value).split(",") if isinstance(value, str) else [str(v) for v in value]
    names = tuple(n.strip() for n in items if n.strip())
    return () if names == ("none",) else names


def tracker_checks(config: Any) -> list[tuple[bool, str]]:
    """The validity check of ``log_with`` (for a config's ``__post_init__``): every name is one of accelerate's
    trackers (:class:`accelerate.utils.LoggerType`). Whether its package is installed is checked when a trainer
    starts (:func:`check_trackers_installed`), not here: a config read back from a run folder or a model card must
    load on a machine without that package."""
    names = getattr(config, "log_with", ())
    if not names:
        return []
    from accelerate.utils import LoggerType

    known = [t.value for t in LoggerType]
    unknown = [n for n in names if n not in known]
    return [(not unknown, f"log_with names unknown tracker(s) {unknown}; accelerate's trackers are {known}")]


def check_trackers_installed(names: Sequence[str]) -> None:
    """Refuse a tracker whose package is not installed, naming the package. Why here: accelerate itself only skips
    such a tracker (a debug message), so a run asked to log to TensorBoard would train for hours and log nothing."""
    if not names:
        return
    from accelerate.tracking import get_available_trackers

    available = {t.value for t in get_available_trackers()}
    if "all" in names and not available:
        raise SteerEnvsError(
            "log_with = ['all'] but none of accelerate's trackers is installed; install one, e.g. "
            "`pip install tensorboard`, or drop log_with / --log-with"
        )
    missing = [n for n in names if n != "all" and n not in available]
    if missing:
        packages = [TRACKER_PACKAGES.get(n, n) for n in missing]
        raise SteerEnvsError(
            f"log_with: tracker(s) {missing} need package(s) that are not installed; "
            f"`pip install {' '.join(packages)}`, or drop them from log_with / --log-with"
        )


def tracker_scalars(record: Mapping[str, Any]) -> dict[str, int | float]:
    """The numbers of a log row, as trackers take them (scalars): booleans as 0/1; strings, lists and ``None`` left
    out (they stay in ``log.jsonl``)."""
    out: dict[str, int | float] = {}
    for key, value in record.items():
        if isinstance(value, bool):
            out[key] = int(value)
        elif isinstance(value, numbers.Integral):
            out[key] = int(value)
        elif isinstance(value, numbers.Real):
            out[key] = float(value)
    return out


def tracker_config(config: Any) -> dict[str, bool | int | float | str]:
    """The config as trackers' hyperparameters: they take flat scalars (TensorBoard's hparams refuse anything else),
    so lists, dicts and ``None`` go as their JSON text."""
    return {
        key: value if isinstance(value, (bool, int, float, str)) else json.dumps(value, sort_keys=True)
        for key, value in config.to_dict().items()
    }


def check_data_parallel(num_processes: int, executor: str | None) -> None:
    """Refuse data parallelism over a nondeterministic executor. Why: every process rolls out the batch itself and
    relies on the seeds making those rollouts identical (it then takes its share of the micro-batches); with an
    ``openai:`` or ``hf:`` executor the processes' rollouts diverge, so their gradients would belong to different
    batches. ``executor=None`` (a trainer without one) and a single process always pass."""
    if num_processes <= 1 or executor is None:
        return
    from steer_envs.executors.registry import is_deterministic

    if not is_deterministic(executor):
        raise SteerEnvsError(
            f"data parallelism over {num_processes} processes needs a deterministic executor, but {executor!r} is not "
            "(each process rolls out the same batch itself, and this executor's rollouts differ between processes); "
            "run one process (drop `accelerate launch --num_processes`), or use a deterministic executor such as "
            "'sim:default' or 'replay:...'"
        )


def release_line(version: str) -> tuple[int, ...]:
    """The part of a version that must match for a run folder to resume: ``major.minor`` before 1.0 (each 0.x
    release may change configs, fingerprints and checkpoints), ``major`` from 1.0 on."""
    try:
        parts = tuple(int(p) for p in version.split(".")[:2])
    except ValueError:
        return (-1,)  # not a release version: matches nothing but itself (compared as a string by the caller)
    return parts if parts[0] == 0 else parts[:1]


def check_run_version(saved: Mapping[str, Any], path: str | Path, what: str = "run folder") -> None:
    """Refuse a run folder (or a model file in one) written by another release line of steer-envs, or by one that
    recorded no version (before 0.2.0): its config keys, fingerprint and checkpoint layout may differ from this
    version's, so resuming it here could silently train something else. The error names both versions and the two
    ways on."""
    written = saved.get(VERSION_KEY)
    if isinstance(written, str) and (written == __version__ or release_line(written) == release_line(__version__)):
        return
    by = f"steer-envs {written}" if isinstance(written, str) else "a steer-envs before 0.2.0 (no version recorded)"
    again = f"`pip install steer-envs=={written}`" if isinstance(written, str) else "`pip install 'steer-envs<0.2'`"
    raise SteerEnvsError(
        f"{what} {str(path)!r} was written by {by}; this is steer-envs {__version__}, which cannot use it (configs, "
        f"fingerprints and checkpoints may differ between these versions). Start a new run folder (another --out), "
        f"or reinstall the version that wrote it ({again}) to finish or use this run."
    )


def weights_digest(params: Sequence[torch.Tensor]) -> str:
    """A SHA-256 of the trainable weights' bytes: a run compares the digest it ends with to the one it started with
    (kept in its checkpoint, so a resumed run compares with the true start) to say when training changed nothing,
    e.g. a LoRA adapter whose B matrices never left their zero start (it equals its base)."""
    import hashlib

    digest = hashlib.sha256()
    for p in params:
        digest.update(p.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()


def read_run_config(path: str | Path) -> dict[str, Any]:
    """The config dict saved in run folder ``path`` (its ``config.json``), after :func:`check_run_version`."""
    path = Path(path)
    saved = json.loads((path / CONFIG_FILE).read_text())
    check_run_version(saved, path)
    return saved["config"]


class Progress:
    """tqdm when asked for (main process only), silent otherwise."""

    def __init__(self, enabled: bool, total: int, desc: str, initial: int = 0) -> None:
        self.bar = None
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=desc, initial=initial, dynamic_ncols=True)

    def update(self, n: int = 1, **postfix: Any) -> None:
        if self.bar is not None:
            self.bar.update(n)
            if postfix:
                self.bar.set_postfix(postfix, refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


_MISSING = object()


class RunFolder:
    """A trainer's run folder. ``marker`` is the file whose presence means "a checkpoint exists"; ``what`` names the
    config in messages. Writes happen only where ``writer`` is true (the main process)."""

    def __init__(self, path: str | Path, config: Any, marker: str, what: str = "config", writer: bool = True) -> None:
        self.path = Path(path)
        self.config = config
        self.marker = marker
        self.what = what
        self.writer = writer

    @property
    def log_path(self) -> Path:
        return self.path / LOG_FILE

    def prepare(self, resume: bool) -> bool:
        """Create or check the folder; return whether a checkpoint should be resumed."""
        if self.writer:
            self.path.mkdir(parents=True, exist_ok=True)
        config_path = self.path / CONFIG_FILE
        has_checkpoint = (self.path / self.marker).exists()
        fingerprint = self.config.fingerprint()
        if config_path.exists():
            saved = json.loads(config_path.read_text())
            check_run_version(saved, self.path)
            if saved.get("fingerprint") != fingerprint:
                old = saved.get("config", {})
                new = self.config.to_dict()
                diff = sorted(
                    k
                    for k in set(old) | set(new)
                    if k not in UNHASHED_FIELDS and old.get(k, _MISSING) != new.get(k, _MISSING)
                )
                raise SteerEnvsError(
                    f"run folder {str(self.path)!r} belongs to a different {self.what} (differs in: "
                    f"{', '.join(diff) or 'unknown keys'}); use a new --out folder, or resume with the same config"
                )
            if has_checkpoint and not resume:
                raise SteerEnvsError(
                    f"run folder {str(self.path)!r} already holds a checkpoint; pass --resume to continue it, "
                    "or choose a new --out folder"
                )
        elif self.writer:
            atomic_write_json(
                config_path, {"fingerprint": fingerprint, VERSION_KEY: __version__, "config": self.config.to_dict()}
            )
        return resume and has_checkpoint

    # -- the log ------------------------------------------------------------------------------------------------
    def start_log(self) -> None:
        if self.writer:
            self.log_path.unlink(missing_ok=True)

    def resume_log(self, keep: int) -> None:
        """Drop log rows of rounds that never checkpointed."""
        if self.writer:
            truncate_jsonl(self.log_path, keep)

    def append_log(self, record: dict[str, Any]) -> None:
        if self.writer:
            append_jsonl(record, self.log_path)

    def read_log(self) -> list[dict[str, Any]]:
        return read_jsonl(self.log_path)

    # -- atomic files -----------------------------------------------------------------------------------------------
    def save_checkpoint(self, name: str, payload: dict[str, Any]) -> None:
        """Tensors + plain data (:mod:`steer_envs.checkpoints`), atomically."""
        if self.writer:
            save_checkpoint(payload, self.path / name)

    def load_checkpoint(self, name: str) -> Any:
        return load_checkpoint(self.path / name)

    def save_tensors(self, name: str, obj: Any) -> None:
        """A tensors-only payload (loads with ``weights_only=True``), atomically."""
        if self.writer:
            atomic_torch_save(obj, self.path / name)

    def load_tensors(self, name: str) -> Any:
        return torch.load(self.path / name, map_location="cpu", weights_only=True)

    def write_json(self, name: str, obj: Any) -> None:
        if self.writer:
            atomic_write_json(self.path / name, obj)

    def read_json(self, name: str) -> Any:
        return json.loads((self.path / name).read_text())


def build_accelerator(
    device: str = "cpu",
    mixed_precision: str = "no",
    log_with: Sequence[str] = (),
    project_dir: str | Path | None = None,
):
    """An :class:`accelerate.Accelerator` for these settings. accelerate keeps one process-wide state; a trainer asking
    for another mixed precision than the one already set (tests, notebooks) resets that state first (the process
    group, if any, is kept). ``log_with`` names accelerate's experiment trackers, whose files go under
    ``project_dir``; without them the accelerator is the plain one of a run without tracking."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    state = AcceleratorState._shared_state
    if state and (
        state.get("_mixed_precision") != mixed_precision
        or (device == "cpu") != (getattr(state.get("device"), "type", "cpu") == "cpu")
    ):
        AcceleratorState._reset_state()
    if not log_with:
        return Accelerator(cpu=device == "cpu", mixed_precision=mixed_precision)
    return Accelerator(
        cpu=device == "cpu",
        mixed_precision=mixed_precision,
        log_with=list(log_with),
        project_dir=str(project_dir) if project_dir is not None else None,
    )


def end_processes() -> None:
    """End a run of several processes (``accelerate launch``) in order: wait for every process, then destroy the
    process group. Why: a process that exits with its gloo process group still alive can abort at exit
    ("terminate called without an active exception", SIGABRT) while the other process is already gone; measured
    on this CPU, 10 of 20 two-process launches of a bare all-reduce aborted so, 0 of 20 with this call. A single
    process (or no accelerate state at all) is left untouched. Call it once, after the last trainer of the process
    has finished: the process group cannot be used afterwards."""
    from accelerate.state import PartialState

    if not PartialState._shared_state:
        return
    state = PartialState()
    if state.num_processes > 1:
        state.wait_for_everyone()
        state.destroy_process_group()


def leave_launched_process(code: int = 0) -> int:
    """The last call of a process of a multi-process run (``accelerate launch``), after :func:`end_processes` and
    its last output: flush, then exit with ``code`` at once, without the interpreter's teardown. A single process
    gets ``code`` back and exits as usual.

    Why: with every result written and the process group ended, the main process's teardown still aborted now and
    then (SIGABRT, "terminate called without an active exception": a C++ object of torch's distributed stack
    destroyed while one of its threads ran), 3 of 12 two-process training launches on 2 cores kept busy by other
    jobs; the launcher then stops the other process and reports the whole run failed. Leaving without the
    teardown runs none of those destructors; nothing is lost, since trainers close their files and trackers when
    their run ends."""
    import logging

    from accelerate.state import PartialState

    if not PartialState._shared_state or PartialState().num_processes <= 1:
        return code
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class TrainerBase:
    """What a trainer shares: its run folder, its accelerator, its experiment trackers and the micro-batched,
    data-parallel update step.

    Subclasses set :attr:`checkpoint_marker`, :attr:`config_what` and :attr:`tracker_project`, use
    :meth:`micro_batches`, :meth:`backward`, :meth:`sync_gradients` and :meth:`reduce_sum` in their update, log each
    row with :meth:`append_log`, and call :meth:`end_tracking` when their run ends, however it ends."""

    checkpoint_marker = "checkpoint.pt"
    config_what = "config"
    #: the trackers' project name (a W&B/MLflow project; TensorBoard's folder ``<run>/trackers/<project>``)
    tracker_project = "steer-envs"

    def __init__(self, config: Any, run_dir: str | Path, resume: bool = False, progress: bool = False) -> None:
        self.config = config
        self.run_dir = Path(run_dir)
        self.resume = resume
        self.progress = progress
        self._accelerator = None
        self._folder: RunFolder | None = None
        self._tracking = False

    # -- accelerate -----------------------------------------------------------------------------------------------
    @property
    def accelerator(self):
        if self._accelerator is None:
            self._accelerator = build_accelerator(
                getattr(self.config, "device", "cpu"),
                getattr(self.config, "mixed_precision", "no"),
                self.log_with,
                self.run_dir / TRACKERS_DIR,
            )
        return self._accelerator

    @property
    def log_with(self) -> tuple[str, ...]:
        return tuple(getattr(self.config, "log_with", ()) or ())

    @property
    def num_processes(self) -> int:
        return int(self.accelerator.num_processes)

    @property
    def is_main_process(self) -> bool:
        return bool(self.accelerator.is_main_process)

    @property
    def device(self) -> torch.device:
        return self.accelerator.device

    def place(self, model: Any) -> Any:
        """Move a model (anything with ``.to``) to the accelerator's device; a CPU run leaves it untouched."""
        if self.device.type != "cpu" and hasattr(model, "to"):
            moved = model.to(self.device)
            return model if moved is None else moved
        return model

    def model_args(self, args: dict[str, Any]) -> dict[str, Any]:
        """A backbone's or learner's arguments with ``device="auto"`` made this process's accelerator device when
        the trainer itself runs on an accelerator: with several processes each loads its model straight onto its
        own GPU, instead of every process loading onto the first GPU and moving it afterwards."""
        out = dict(args)
        if out.get("device") == "auto" and self.device.type != "cpu":
            out["device"] = str(self.device)
        return out

    def autocast(self):
        """Mixed precision around a loss computation (a no-op with ``mixed_precision="no"``)."""
        if getattr(self.config, "mixed_precision", "no") == "no":
            return nullcontext()
        return self.accelerator.autocast()

    # -- the run folder -------------------------------------------------------------------------------------------
    @property
    def folder(self) -> RunFolder:
        if self._folder is None:
            self._folder = RunFolder(
                self.run_dir, self.config, self.checkpoint_marker, self.config_what, writer=self.is_main_process
            )
        return self._folder

    def _prepare_run_dir(self) -> bool:
        """Create or check the folder; return whether a checkpoint should be resumed. Refuses first a tracker whose
        package is missing (:func:`check_trackers_installed`) and a data-parallel run that cannot give every process
        the same batch (:func:`check_data_parallel`), so neither is found out after training began; starts the
        trackers once the folder is known to be this run's."""
        check_trackers_installed(self.log_with)
        check_data_parallel(self.num_processes, getattr(self.config, "executor", None))
        resuming = self.folder.prepare(self.resume)
        self.start_tracking()
        return resuming

    # -- experiment trackers (accelerate's) -------------------------------------------------------------------------
    def start_tracking(self) -> None:
        """``init_trackers`` with the config as hyperparameters (accelerate starts them on the main process only)."""
        if self.log_with and not self._tracking:
            self.accelerator.init_trackers(self.tracker_project, config=tracker_config(self.config))
            self._tracking = True

    def append_log(self, record: dict[str, Any], step: int) -> None:
        """A row to ``log.jsonl`` and, with ``log_with``, its numbers to the trackers at ``step``: the same values
        in both places."""
        self.folder.append_log(record)
        if self._tracking:
            self.accelerator.log(tracker_scalars(record), step=step)

    def end_tracking(self) -> None:
        """End the trackers (their files flushed and closed); a no-op when none were started. A single process ends
        through accelerate's ``end_training``. With several processes only the trackers are finished: ``end_training``
        would also destroy the process group, which the log's last barrier, later trainers of the same process and
        :func:`end_processes` (the ordered end) still need."""
        if not self._tracking:
            return
        self._tracking = False
        if self.num_processes == 1:
            self.accelerator.end_training()
        else:
            for tracker in self.accelerator.trackers:
                tracker.finish()

    def finished_log(self) -> list[dict[str, Any]]:
        """The whole log once every process is done: the main process writes it, the others wait for its last row
        (without the barrier a second process could return before the main one appended the final round)."""
        if self.num_processes > 1:
            self.accelerator.wait_for_everyone()
        return self.folder.read_log()

    def warn(self, message: str) -> None:
        """A degenerate outcome said out loud (on stderr, once: the main process), beside its record in the run
        folder's log: a run that changed nothing must not look like one that learned."""
        if self.is_main_process:
            print(f"steer-envs train: warning: {message}", file=sys.stderr, flush=True)

    def progress_bar(self, total: int, desc: str, initial: int = 0) -> Progress:
        return Progress(self.progress and self.is_main_process, total, desc, initial)

    # -- micro-batches and gradients -----------------------------------------------------------------------------
    def micro_batches(self, n: int) -> list[range]:
        """This process's micro-batches of ``n`` units, as index ranges. ``micro_batch = 0``: one range of ``n``
        (split in equal shares when several processes run). Every process sees the same global list of ranges and
        takes a contiguous share of it (``split_between_processes``), so the union over processes is the batch."""
        if n <= 0:
            return []
        size = getattr(self.config, "micro_batch", 0) or -(-n // self.num_processes)
        chunks = [range(i, min(n, i + size)) for i in range(0, n, size)]
        if self.num_processes == 1:
            return chunks
        with self.accelerator.split_between_processes(chunks) as mine:
            return list(mine)

    def backward(self, loss: torch.Tensor) -> None:
        self.accelerator.backward(loss)

    def sync_gradients(self, params: Sequence[torch.nn.Parameter]) -> None:
        """Sum every parameter's gradient over processes (a parameter that no process touched keeps ``grad=None``,
        as a single process would leave it: the optimiser then skips it). A no-op in a single process."""
        if self.num_processes == 1 or not params:
            return
        params = list(params)
        device = params[0].device
        flat = torch.cat(
            [(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1).float() for p in params]
            + [torch.tensor([float(p.grad is not None) for p in params], device=device)]
        )
        total = self.accelerator.reduce(flat.to(self.device), reduction="sum").to(device)
        touched = total[-len(params) :]
        offset = 0
        for p, hit in zip(params, touched.tolist()):
            size = p.numel()
            if hit > 0:
                p.grad = total[offset : offset + size].view_as(p).to(p.dtype).clone()
            offset += size

    def reduce_sum(self, values: Sequence[float]) -> list[float]:
        """Sum plain numbers over processes (loss parts and counters for the log); identity in one process."""
        if self.num_processes == 1:
            return [float(v) for v in values]
        t = torch.tensor([float(v) for v in values], dtype=torch.float64, device=self.device)
        return [float(v) for v in self.accelerator.reduce(t, reduction="sum").cpu()]

    @contextmanager
    def main_process_first(self):
        with self.accelerator.main_process_first():
            yield
