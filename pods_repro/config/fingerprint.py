"""What trained a run: the training-relevant config of a :class:`TrainConfig` and its SHA-256.

Every checkpoint carries it (``pods_state.json``), a resume is checked against it, and the job's
record keeps it per run, so that a record assembled from several sittings can be checked against
what the default job trains today. Torch-free.

Left out (:data:`FINGERPRINT_EXCLUDED`): where the run lives, how far it goes and how often it is
saved: ``out_dir``, the budget (``budget.max_steps``, ``budget.max_time_s``: a step budget makes a
longer run continue the shorter one's steps) and ``checkpoint.every_steps``. ``budget.max_steps``
counts when it is the learning-rate schedule's horizon (a decaying ``optim.scheduler`` without
``optim.scheduler_steps``): then it changes the learning rate of every step.

Left out while at their default (:data:`FINGERPRINT_OMIT_AT_DEFAULT`): keys added to the schema after runs
were recorded whose default changes nothing those runs computed (the group filters, the GRESO skip, reward
noise). A run that sets one has it in its fingerprint; a run that leaves it at its default keeps the
fingerprint it had before the key existed, so recorded runs and their checkpoints still match.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import PurePath
from typing import Any

__all__ = [
    "FINGERPRINT_EXCLUDED",
    "FINGERPRINT_OMIT_AT_DEFAULT",
    "config_digest",
    "config_fingerprint",
    "flat_config",
    "run_fingerprint",
]

FINGERPRINT_EXCLUDED = ("out_dir", "budget.max_time_s", "budget.max_steps", "checkpoint.every_steps")
FINGERPRINT_OMIT_AT_DEFAULT = (
    "rollout.filter",
    "rollout.refill_max_rounds",
    "rollout.skip_after",
    "rollout.skip_prob",
    "task.reward_noise",
)
"""Keys added after runs were recorded: left out of the fingerprint while they hold their schema default."""


def _schema_defaults() -> dict[str, Any]:
    from pods_repro.config import TrainConfig, to_dict

    return flat_config(to_dict(TrainConfig()))


def flat_config(d: dict, prefix: str = "") -> dict[str, Any]:
    """A nested config dict as dotted key -> value (an empty section stays one key)."""
    out: dict[str, Any] = {}
    for key, value in d.items():
        if isinstance(value, dict) and value:
            out.update(flat_config(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _plain(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, PurePath):
        return str(x)
    return x


def config_digest(flat: dict) -> str:
    """SHA-256 (hex) of the canonical JSON of ``flat``: sorted keys, no spaces, NaN/inf as null."""
    canonical = json.dumps(_plain(flat), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def config_fingerprint(cfg: Any) -> tuple[dict[str, Any], str]:
    """The training-relevant config of ``cfg`` (a :class:`pods_repro.config.TrainConfig`) as dotted key -> value,
    and its SHA-256 (:func:`config_digest`)."""
    from pods_repro.config import to_dict

    flat = flat_config(to_dict(cfg))
    horizon = cfg.optim.scheduler != "constant" and cfg.optim.scheduler_steps is None
    flat = {k: v for k, v in flat.items() if k not in FINGERPRINT_EXCLUDED or (horizon and k == "budget.max_steps")}
    defaults = _schema_defaults()
    flat = {k: v for k, v in flat.items() if not (k in FINGERPRINT_OMIT_AT_DEFAULT and v == defaults.get(k))}
    return flat, config_digest(flat)


def run_fingerprint(run_dir: PurePath | str) -> str:
    """The fingerprint of the config a finished run directory's ``config.json`` holds (its ``meta`` left out).

    Raises ``ValueError`` (or ``OSError``, ``ConfigError``, ``TypeError``) on an unreadable or invalid file; the
    records that check their runs with it turn that into their own one-line error."""
    from pathlib import Path

    from pods_repro.config import from_dict

    raw = json.loads((Path(run_dir) / "config.json").read_text(encoding="utf-8"))
    raw.pop("meta", None)
    return config_fingerprint(from_dict(raw))[1]
