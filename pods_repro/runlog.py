"""Run-directory logging: ``config.json``, ``metrics.jsonl``, ``eval.jsonl``, ``summary.json``.

One :class:`RunLogger` writes every file of a run directory the same way for every run (the schema
is in docs/design.md, "Run directory"); analysis reads only these files, never stdout.

- ``config.json``: the resolved config plus ``meta`` (package versions, git commit, start time,
  host), written atomically once when the run starts.
- ``metrics.jsonl`` / ``eval.jsonl``: append-only, one JSON object per line, each line written with
  a single ``write`` call and flushed, so a SIGKILL leaves at most one partial trailing line.
  Resuming truncates both files back to the byte offsets recorded with the checkpoint
  (:meth:`RunLogger.offsets` / :meth:`RunLogger.truncate`), so re-run steps never duplicate lines.
- ``summary.json``: written last, atomically (temp file + ``os.replace``); its presence means the
  run finished and must not be rerun.
- ``.pods.lock``: ``flock``-ed by the one process that writes the directory (:func:`run_dir_lock`); a
  second writer is refused. The kernel drops the lock when its holder dies, so a killed run never
  blocks its own resume.
- ``checkpoints/checkpoint-{step}/``: HF Trainer checkpoints; ``pods_state.json`` (:data:`STATE_FILE`)
  is written last into each and marks it complete (:func:`latest_checkpoint`, :func:`prune_checkpoints`).

Non-finite floats (NaN, inf) are written as ``null``: JSON has no NaN, and ``json.dumps`` would
otherwise emit the invalid token ``NaN``.

Usage::

    log = RunLogger(run_dir)
    log.write_config(to_dict(cfg), run_meta())
    log.log_metrics({"step": 1, "time_s": 3.2, ...})
    log.write_summary({...})
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import importlib.metadata
import json
import math
import os
import platform
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pods.base import DiskWriteError, writing  # noqa: F401  (the library's guard; run logs raise it too)

__all__ = [
    "STATE_FILE",
    "DiskWriteError",
    "RunDirError",
    "RunLogger",
    "atomic_write_json",
    "checkpoint_unreadable",
    "cpu_info",
    "final_missing_message",
    "git_commit",
    "jsonable",
    "latest_checkpoint",
    "package_versions",
    "prune_checkpoints",
    "peak_memory_mb",
    "read_jsonl",
    "resumable_checkpoint",
    "run_dir_lock",
    "run_meta",
    "writable_dir_problem",
    "writing",
]

CONFIG = "config.json"
METRICS = "metrics.jsonl"
EVAL = "eval.jsonl"
SUMMARY = "summary.json"
POSTHOC_EVAL = "posthoc_eval.jsonl"
STATE_FILE = "pods_state.json"  # written last into each checkpoint directory; marks it complete
CKPT_RE = re.compile(r"^checkpoint-(\d+)$")
LOCK = ".pods.lock"

# Packages whose versions change results; recorded in config.json["meta"]["packages"].
_PACKAGES = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "math-verify", "vllm", "deepspeed")


class RunDirError(ValueError):
    """A run directory that cannot be used as it is (in use, damaged, unwritable); the CLI exits 2."""


@contextlib.contextmanager
def run_dir_lock(run_dir: str | os.PathLike, enabled: bool = True) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``run_dir/.pods.lock`` for the duration; raise :class:`RunDirError`
    at once if another process holds it. The kernel releases the lock when the holder exits or is
    killed, so no stale lock can outlive its process (unlike a pid file)."""
    if not enabled:
        yield
        return
    path = Path(run_dir) / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
            raise RunDirError(
                f"{run_dir} is in use by another `pods train` ({holder}). Fix: wait for that run to finish "
                "or stop it, then rerun this command (it resumes); or choose another out_dir"
            ) from None
        os.ftruncate(fd, 0)
        stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} since {stamp}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def writable_dir_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot become a writable run directory (None: it can), checked without leaving a file:
    it is a file, lies below a file, or its nearest existing ancestor takes no new files."""
    path = Path(path)
    anc = path
    while not anc.exists() and not anc.is_symlink() and anc.parent != anc:
        anc = anc.parent
    if not anc.is_dir():
        return "is a file, not a directory" if anc == path else f"lies below the file {anc}"
    probe = None
    try:
        fd, probe = tempfile.mkstemp(prefix=".pods-probe-", dir=anc)
        os.close(fd)
    except OSError as e:
        return f"is not writable ({anc}: {e.strerror or e})"
    finally:
        if probe is not None:
            Path(probe).unlink(missing_ok=True)
    return None


def jsonable(obj: Any) -> Any:
    """A copy of ``obj`` that ``json.dumps`` writes as strict JSON (NaN/inf -> None, tensors -> numbers)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, (int, str)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", 0) == 0:  # torch / numpy scalar
        return jsonable(obj.item())
    if hasattr(obj, "tolist"):
        return jsonable(obj.tolist())
    raise TypeError(f"cannot write {type(obj).__name__} to a JSON log; convert it to a number, string or list")


def _dumps(obj: Any, **kw: Any) -> str:
    return json.dumps(jsonable(obj), allow_nan=False, **kw)


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` so that readers see either the old file or the whole new one."""
    path = Path(path)
    text = _dumps(obj, indent=2, sort_keys=True) + "\n"
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes it 0600; a results file is read by others
            with os.fdopen(fd, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _prefix_damage(path: Path, size: int) -> str | None:
    """Why the first ``size`` bytes of a JSONL log are not the whole lines a checkpoint recorded (None: they are)."""
    have = path.stat().st_size
    if have < size:
        return f"it has {have} bytes but the checkpoint recorded {size}"
    with open(path, "rb") as f:
        head = f.read(size)
    if size and not head.endswith(b"\n"):
        return f"byte {size}, where the checkpoint's lines end, is not the end of a line"
    for i, line in enumerate(head.split(b"\n")[:-1], 1):
        try:
            row = json.loads(line)
        except ValueError as e:
            return f"line {i} is not JSON ({e})"
        if not isinstance(row, dict):
            return f"line {i} is not a JSON object"
    return None


def read_jsonl(path: str | os.PathLike, allow_partial_tail: bool = False) -> list[dict]:
    """Parse a JSONL log. A malformed line (not UTF-8, not JSON, or JSON but not an object) raises
    ``ValueError`` naming the file and line number (``<path>:<line>: ...``).

    ``allow_partial_tail=True`` tolerates an unterminated last line (a run killed mid-write), which
    resuming truncates away.
    """
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    tail_partial = not data.endswith(b"\n") and data != b""
    rows = []
    for i, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            if allow_partial_tail and tail_partial and i == len(lines):
                break  # a kill can cut a multi-byte character too
            raise ValueError(
                f"{path}:{i}: not UTF-8 text (byte 0x{raw[e.start]:02x} at column {e.start + 1}); the file is damaged"
            ) from None
        except json.JSONDecodeError as e:
            if allow_partial_tail and tail_partial and i == len(lines):
                break
            raise ValueError(f"{path}:{i}: not a JSON line ({e}); the run may have been killed mid-write") from e
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{i}: not a JSON object (a {type(row).__name__}); the file is damaged")
        rows.append(row)
    return rows


def git_commit(repo: str | os.PathLike | None = None) -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of the repository holding this package."""
    repo = Path(repo) if repo is not None else Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
        return {"commit": sha, "dirty": bool(status.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}  # not a git checkout (e.g. an installed wheel) or no commits yet


def package_versions(names: Iterable[str] = _PACKAGES) -> dict[str, str | None]:
    """Installed versions of the packages that change results (None where not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    try:
        import pods

        out["pods"] = pods.__version__
    except (ImportError, AttributeError):
        out["pods"] = None
    return out


def cpu_info() -> dict[str, str | None]:
    """The CPU a run's numbers were computed on: its model name and the instruction set torch's kernels
    dispatch to (``torch.backends.cpu.get_cpu_capability()``, e.g. AVX2, AVX512). A step-budget run is
    the same whatever the machine's load, but float rounding differs between instruction sets (the
    tiny scale's gradients differ in their last bits under AVX2 vs AVX512 dispatch, and a sampled
    token can flip many steps later), so runs compare bit for bit only on the same CPU kind."""
    from pods_repro.kernels import cpuinfo_field, kernels_label

    model = cpuinfo_field("model name") or platform.processor() or None
    try:
        import torch

        capability = torch.backends.cpu.get_cpu_capability()
    except (ImportError, AttributeError):
        capability = None
    return {"model": model, "torch_capability": capability, "kernels": kernels_label()}


def run_meta(num_processes: int = 1, distributed: dict | None = None, use_cuda: bool | None = None) -> dict[str, Any]:
    """The ``meta`` block of config.json: versions, git commit, start time, host, device, CPU, and how
    the run was launched (``distributed``: accelerate's distributed type and DeepSpeed's ZeRO stage).
    ``device`` is the GPU's name where the run uses one (``use_cuda``), else "cpu": a CPU run on a machine
    with a GPU (``hardware.device=cpu``) says "cpu", not the GPU's name. ``use_cuda``
    None: the GPU where one is visible."""
    device = "cpu"
    try:
        import torch

        if torch.cuda.is_available() and use_cuda is not False:
            device = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return {
        "packages": package_versions(),
        "git": git_commit(),
        "start_time": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "device": device,
        "cpu": cpu_info(),
        "num_processes": num_processes,
        "distributed": distributed or {},
        "argv": sys.argv,
    }


def peak_memory_mb(cuda: bool) -> float:
    """Peak memory in MiB: CUDA ``max_memory_allocated`` (since the last reset) or the CPU peak RSS.

    The CPU figure is the process's lifetime peak resident set (``ru_maxrss``), so it never decreases.
    """
    if cuda:
        import torch

        return torch.cuda.max_memory_allocated() / 2**20
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return rss / 2**20 if sys.platform == "darwin" else rss / 2**10


class RunLogger:
    """Writes the logs of one run directory. ``enabled=False`` (non-main processes) makes writes no-ops."""

    def __init__(self, run_dir: str | os.PathLike, enabled: bool = True):
        self.run_dir = Path(run_dir)
        self.enabled = enabled
        if enabled:
            self.run_dir.mkdir(parents=True, exist_ok=True)

    # -- paths -----------------------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.run_dir / CONFIG

    @property
    def metrics_path(self) -> Path:
        return self.run_dir / METRICS

    @property
    def eval_path(self) -> Path:
        return self.run_dir / EVAL

    @property
    def summary_path(self) -> Path:
        return self.run_dir / SUMMARY

    @property
    def finished(self) -> bool:
        """True when summary.json exists: the run completed and must not be rerun."""
        return self.summary_path.exists()

    # -- writing ---------------------------------------------------------------------------
    def write_config(self, config: dict, meta: dict | None = None) -> None:
        if self.enabled:
            atomic_write_json(self.config_path, {**config, "meta": meta or {}})

    def read_config(self) -> dict | None:
        """config.json, parsed (None: there is none); :class:`RunDirError` naming it if it is damaged."""
        if not self.config_path.exists():
            return None
        try:
            config = json.loads(self.config_path.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            config = e
        if not isinstance(config, dict):
            raise RunDirError(
                f"{self.config_path} is damaged ({config if isinstance(config, Exception) else 'not an object'}): "
                "the run's settings cannot be read, so it can be neither resumed nor evaluated. Fix: restore it, "
                "or delete the run directory and rerun"
            )
        return config

    def _append(self, path: Path, row: dict) -> None:
        if not self.enabled:
            return
        line = _dumps(row, sort_keys=False) + "\n"
        # One write() per line: a SIGKILL can cut a line short but never interleave two.
        with writing(path), open(path, "a") as f:
            f.write(line)
            f.flush()

    def log_metrics(self, row: dict) -> None:
        """Append one optimizer step to metrics.jsonl."""
        self._append(self.metrics_path, row)

    def log_eval(self, row: dict) -> None:
        """Append one evaluation (one dataset at one point of training time) to eval.jsonl."""
        self._append(self.eval_path, row)

    def log_posthoc_eval(self, row: dict) -> None:
        """Append one post-hoc evaluation (``pods eval``) to posthoc_eval.jsonl."""
        self._append(self.run_dir / POSTHOC_EVAL, row)

    def write_summary(self, summary: dict) -> None:
        """Write summary.json atomically; call it last."""
        if self.enabled:
            atomic_write_json(self.summary_path, summary)

    # -- resume ----------------------------------------------------------------------------
    def offsets(self) -> dict[str, int]:
        """Byte sizes of the JSONL logs, stored with a checkpoint so that resume can cut back to them."""
        return {
            name: (self.run_dir / name).stat().st_size if (self.run_dir / name).exists() else 0
            for name in (METRICS, EVAL)
        }

    def truncate(self, offsets: dict[str, int] | None = None) -> None:
        """Cut metrics.jsonl / eval.jsonl back to ``offsets`` (None: empty them), dropping re-run lines."""
        if not self.enabled:
            return
        cuts = []
        for name in (METRICS, EVAL):  # check both logs before cutting either: an error loses nothing
            path = self.run_dir / name
            size = 0 if offsets is None else int(offsets.get(name, 0))
            if not path.exists():
                if size:
                    raise RunDirError(
                        f"{path} is missing but the checkpoint expects {size} bytes of it. Fix: restore it, or "
                        "delete the run directory to start over"
                    )
                continue
            damage = _prefix_damage(path, size)
            if damage:
                raise RunDirError(
                    f"{path} is damaged: {damage} (the log was cut, edited or replaced after the checkpoint). Fix: "
                    "restore it, or delete the run directory to start over"
                )
            cuts.append((path, size))
        for path, size in cuts:
            with writing(path), open(path, "r+") as f:
                f.truncate(size)

    # -- a finished run, checked ---------------------------------------------------------------
    def read_summary(self) -> dict:
        """summary.json, parsed; :class:`RunDirError` naming it if it is not a finished-run summary."""
        path = self.summary_path
        fix = (
            f"Fix: delete {path} and rerun the same `pods train`: it finishes again from the last checkpoint "
            "(or delete the run directory to start over)"
        )
        try:
            summary = json.loads(path.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise RunDirError(f"{path} is damaged (not valid JSON: {e}). {fix}") from None
        if (
            not isinstance(summary, dict)
            or summary.get("status") != "finished"
            or type(summary.get("steps")) is not int
        ):
            raise RunDirError(f"{path} is damaged (not a finished-run summary: no status 'finished' and steps). {fix}")
        return summary

    def check_finished(self, expected: dict | None = None) -> dict:
        """The summary of a finished run after checking it against ``expected`` (e.g. n, m, rule, seed),
        metrics.jsonl (every step 1..steps, once) and eval.jsonl (``n_evals`` lines); raises
        :class:`RunDirError` naming the damaged file."""
        summary = self.read_summary()
        for key, want in (expected or {}).items():
            if summary.get(key) != want:
                raise RunDirError(
                    f"{self.summary_path} says {key}={summary.get(key)!r} but the config has {key}={want!r}: it is "
                    "not this run's summary. Fix: choose another out_dir, or delete the run directory to start over"
                )
        steps = summary["steps"]
        for path, what in ((self.metrics_path, "step"), (self.eval_path, "evaluation")):
            try:
                rows = read_jsonl(path)
            except ValueError as e:
                raise RunDirError(f"{path} is damaged ({e}). Fix: restore it, or delete the run directory") from None
            if what == "step":
                got = [r.get("step") for r in rows]
                ok, want_desc = got == list(range(1, steps + 1)), f"summary.json says {steps} steps"
            else:
                ok, want_desc = (
                    len(rows) == summary.get("n_evals", len(rows)),
                    f"summary.json says {summary.get('n_evals')} evaluations",
                )
            if not ok:
                raise RunDirError(
                    f"{path} is damaged: it holds {len(rows)} {what} line(s) but {want_desc} (lines lost or "
                    "duplicated). Fix: restore it, or delete the run directory and rerun"
                )
        return summary

    def metrics(self) -> list[dict]:
        return read_jsonl(self.metrics_path)

    def evals(self) -> list[dict]:
        return read_jsonl(self.eval_path)


# ------------------------------------------------------------------------------------------------
# Checkpoints of a run directory
# ------------------------------------------------------------------------------------------------
def final_missing_message(run_dir: Path) -> str:
    """What to do about a finished run (summary.json) whose final policy folder is gone."""
    return (
        f"{run_dir} finished (summary.json) but its final policy {run_dir / 'final'} is missing. Fix: delete "
        f"{run_dir / 'summary.json'} and rerun the same `pods train`: it goes on from the last checkpoint (the step "
        "budget makes that the same run) and saves the final policy again"
    )


def latest_checkpoint(ckpt_root: str | os.PathLike) -> tuple[Path | None, dict | None]:
    """The newest *complete* checkpoint under ``ckpt_root`` (one holding pods_state.json) and its state."""
    root = Path(ckpt_root)
    if not root.is_dir():
        return None, None
    found = []
    for d in root.iterdir():
        mt = CKPT_RE.match(d.name)
        if mt and d.is_dir() and (d / STATE_FILE).exists():
            try:
                found.append((int(mt.group(1)), d, json.loads((d / STATE_FILE).read_text())))
            except (json.JSONDecodeError, OSError):
                continue
    if not found:
        return None, None
    _, path, state = max(found, key=lambda t: t[0])
    return path, state


def prune_checkpoints(ckpt_root: str | os.PathLike, keep: Path | None) -> None:
    """Delete every checkpoint directory except ``keep`` (incomplete ones included)."""
    root = Path(ckpt_root)
    if not root.is_dir():
        return
    for d in root.iterdir():
        if d.is_dir() and CKPT_RE.match(d.name) and (keep is None or d.resolve() != keep.resolve()):
            shutil.rmtree(d, ignore_errors=True)


# Files HF's Trainer writes into a checkpoint that an exact resume needs (besides pods_state.json).
WEIGHT_FILES = ("model.safetensors", "adapter_model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


def checkpoint_missing(ckpt: Path, num_processes: int) -> list[str]:
    """The files an exact resume from ``ckpt`` needs that are absent or empty (none: complete)."""

    def ok(name: str) -> bool:
        return (ckpt / name).is_file() and (ckpt / name).stat().st_size > 0

    missing = [] if ok("trainer_state.json") else ["trainer_state.json"]
    if not any(ok(w) for w in WEIGHT_FILES):
        missing.append("model weights (" + " / ".join(WEIGHT_FILES[:2]) + ")")
    if not any(ckpt.glob("global_step*")):  # DeepSpeed keeps optimizer (and scheduler) state there
        missing += [name for name in ("optimizer.pt", "scheduler.pt") if not ok(name)]
    rng = ["rng_state.pth"] if num_processes == 1 else [f"rng_state_{i}.pth" for i in range(num_processes)]
    return missing + [name for name in rng if not ok(name)]


def checkpoint_unreadable(ckpt: Path) -> list[str]:
    """Files of ``ckpt`` that are present but cut or garbled (cheap checks: JSON parses, the safetensors
    header reads, torch's zip archives are complete), each with the reason; none: it looks readable."""
    bad = []
    for path in sorted(ckpt.glob("*.json")):
        try:
            json.loads(path.read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            bad.append(f"{path.name} ({e})")
    for path in sorted(ckpt.glob("*.safetensors")):
        try:
            from safetensors import safe_open

            with safe_open(str(path), framework="pt") as f:
                f.keys()
        except Exception as e:  # safetensors raises its own SafetensorError for a cut header
            bad.append(f"{path.name} ({type(e).__name__}: {e})")
    for path in sorted([*ckpt.glob("*.pt"), *ckpt.glob("*.pth"), *ckpt.glob("*.bin")]):
        if not zipfile.is_zipfile(path):  # torch.save's format since 1.6: a zip archive, its directory at the end
            bad.append(f"{path.name} (not a complete torch archive)")
    return bad


def resumable_checkpoint(ckpt_root: str | os.PathLike, num_processes: int) -> tuple[Path | None, dict | None]:
    """The newest checkpoint marked complete (pods_state.json) that holds every file a resume needs.

    A damaged newer checkpoint is skipped with a warning naming its missing files; if every marked
    checkpoint is damaged, :class:`RunDirError` says why (resuming without optimizer, scheduler or RNG
    state would silently change the run). ``(None, None)``: nothing to resume, a fresh start.
    """
    root = Path(ckpt_root)
    marked = sorted(
        ((int(m.group(1)), d) for d in (root.iterdir() if root.is_dir() else []) if (m := CKPT_RE.match(d.name))),
        reverse=True,
    )
    damaged: list[str] = []
    for _, d in marked:
        if not (d / STATE_FILE).is_file():
            continue  # killed while saving: never complete, pruned on resume
        try:
            state = json.loads((d / STATE_FILE).read_bytes().decode("utf-8"))
            if not isinstance(state, dict) or not isinstance(state.get("offsets"), dict):
                raise ValueError("no log offsets")
        except (UnicodeDecodeError, ValueError) as e:
            damaged.append(f"{d / STATE_FILE} is damaged ({e})")
            continue
        missing = checkpoint_missing(d, num_processes)
        if missing:
            damaged.append(f"{d} lacks {', '.join(missing)}")
            continue
        unreadable = checkpoint_unreadable(d)
        if unreadable:
            damaged.append(f"{d} has unreadable {', '.join(unreadable)}")
            continue
        if damaged:
            print(f"[pods] skipping damaged checkpoint(s): {'; '.join(damaged)}; resuming from {d}", file=sys.stderr)
        return d, state
    if damaged:
        raise RunDirError(
            f"no complete checkpoint to resume from: {'; '.join(damaged)}. Resuming without it would not reproduce "
            f"the run. Fix: restore the missing or damaged files, or delete the run directory {root.parent} to start over"
        )
    return None, None
