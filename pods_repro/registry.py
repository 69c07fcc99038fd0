"""The project's vocabulary, declared once: enumerations, tasks, the (rule, n, m) check, run names,
the paper settings (a)-(f) and the run-sheet parser. Torch-free and pandas-free, so the config
checks, the Snakefile, the analysis and the figures all import it cheaply.

Who reads what (docs/design.md, "Module map"):

- :data:`RULES`, :func:`check_rule`: pods.selectors (whose registry keys must equal RULES, tested),
  pods_repro.config (rollout.rule/n/m), the run-sheet parser;
- :data:`TASKS` (name, description, kind): pods_repro.data, pods_repro.config, pods_repro.rewards;
- the other enumerations (prompt styles, reward variants, dtypes, ...): pods_repro.config, pods.grpo;
- :data:`NAME_VOCAB`, :func:`format_run_name`: pods_repro.config.run_name, the Snakefile (run directories
  ``{setting}/{run name}/seed~{seed}``), pods_repro.analysis (roles of released runs);
- :data:`SETTINGS` (one :class:`Setting` per paper setting): the Snakefile (experiment YAML per
  scale), pods_repro.analysis (metric, grid, released-log files, the paper's speed-up), figures (titles);
- :func:`read_sheet`: the Snakefile and pods_repro.analysis. The run sheets (config/runs*.tsv) are the only
  place arms are declared; their `role` column marks each setting's main comparison.

Add a setting (g): an experiments/*.yaml per scale, its rows in the run sheet(s) (one `baseline`,
one `pods`), and one :class:`Setting` record in :data:`SETTINGS` (docs/design.md, "Add a setting").
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pods import base as _base
from pods.base import AGGREGATIONS as AGGREGATIONS
from pods.base import GRPO_RULES as GRPO_RULES
from pods.base import NORMALIZE as NORMALIZE
from pods.base import RuleError

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = Path(__file__).resolve().parent
IN_CHECKOUT = (REPO_ROOT / "pyproject.toml").is_file() and (REPO_ROOT / "experiments").is_dir()
"""True in a git checkout (or an editable install of one); False in an installed wheel."""
SHIPPED = {"experiments": "experiments", "config": "sheets"}
"""Repository folders whose files the wheel ships inside the package (pyproject.toml package-dir):
experiments/*.yaml (+ accelerate/) as pods/experiments/, config/runs*.tsv as pods/sheets/."""


def repo_file(rel: str | Path) -> Path:
    """A shipped repository file by its repository path (``experiments/tiny_a.yaml``,
    ``config/runs.tsv``): the checkout's copy in a checkout, else the copy inside the installed package.
    Paths under other folders, or absent from both, come back as they are in the checkout."""
    rel = Path(rel)
    if rel.is_absolute() or IN_CHECKOUT or not rel.parts or rel.parts[0] not in SHIPPED:
        return rel if rel.is_absolute() else REPO_ROOT / rel
    packaged = PACKAGE_DIR / SHIPPED[rel.parts[0]] / Path(*rel.parts[1:])
    return packaged if packaged.exists() else REPO_ROOT / rel


def experiment_file(name: str) -> Path | None:
    """``experiments/{name}.yaml`` shipped with the project (``tiny_a``, ``a_gsm8k_qwen3b.yaml``), or None."""
    stem = name.removesuffix(".yaml").removesuffix(".yml")
    if not stem or "/" in stem or "\\" in stem or stem.startswith("."):
        return None
    path = repo_file(f"experiments/{stem}.yaml")
    return path if path.is_file() else None


# ----------------------------------------------------------------------------------------------
# enumerations

RULES: tuple[str, ...] = (
    "all",
    "balanced",
    "cppo_abs_advantage",
    "gfpo_shortest",
    "gfpo_token_efficiency",
    "max_reward",
    "max_variance",
    "max_variance_shortest",
    "percentile",
    "random",
)
"""Down-sampling rules (rollout.rule); pods.selectors registers exactly these (tests check)."""
PROMPT_STYLES = ("instruct", "openr1", "plain")
REWARD_VARIANTS = ("paper", "openr1", "code_head", "code_sep24", "code_jun25", "partial")
"""Reward variants (task.reward); pods_repro.rewards.VARIANTS describes each (tests check the names)."""
DTYPES = ("bfloat16", "float16", "float32", "auto")
BACKENDS = ("hf", "vllm")
OPTIMIZERS = ("adamw_torch", "adamw_8bit")
SCHEDULERS = ("constant", "cosine", "linear")
LOGPROB_TEMPERATURES = ("sampling", "none")
"""optim.logprob_temperature: log-probs of logits / T (TRL, the (e)-(f) code) or of raw logits ((a)-(d) code)."""
EVAL_METRICS = ("paper", "code")
"""eval.metric: the training reward's accuracy rule, or the authors' lenient utils/eval.py rule."""
EVAL_NOISE = ("fresh", "common")
"""eval.noise: new sampling noise at each evaluation (the paper), or the same noise at every evaluation of
every run (common random numbers: curves differ only where the policies do)."""
GROUP_FILTERS = ("none", "zero_std", "refill")
"""rollout.filter: group-level filters that compose with any rule: none, the zero-variance filter, or the
DAPO-style refill (generate further prompts until the step has its informative groups)."""
PARTIAL_REWARD_TASKS = ("arith", "arith_hard", "arith_add")
"""Tasks whose answers are integers, where task.reward=partial gives digit-wise partial credit."""
MATH_GOLD = ("balanced", "code")
"""task.math_gold: \\boxed{} with matched braces, or cut at the first '}' as the authors' code."""
FIDELITY = ("paper", "code")
"""Top-level `fidelity`: the paper's text (default) or the authors' code (pods_repro.config.fidelity)."""
DEVICES = ("auto", "cpu", "cuda")
GPU_ATTENTION = ("flash_attention_2", "flash_attention_3")
ATTENTION = (*GPU_ATTENTION, "sdpa", "eager")
METRICS = ("accuracy", "format_accuracy", "both_accuracy", "completion_len_mean")
"""Evaluation metrics as eval.jsonl names them (fractions, except the length in tokens)."""
SCALES = ("paper", "tiny", "smoke")
"""Experiment scales of the workflow (`snakemake --config scale=NAME`)."""
ROLES = ("baseline", "pods")
"""Values of the run sheet's `role` column (empty for the other arms)."""


# ----------------------------------------------------------------------------------------------
# tasks


@dataclass(frozen=True)
class Task:
    """A task: its name in configs, what it is and how it is scored, and its kind:
    ``dataset`` (downloaded train/test splits), ``synthetic`` (generated by pods_repro.data) or
    ``eval_only`` (a test set with no training split)."""

    name: str
    description: str
    kind: str
    generated: bool = False
    """Generated by pods_repro.data (the synthetic arithmetic tasks and their eval-only sets)."""


TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        Task("gsm8k", "GSM8K: gold after '####', commas removed; math-verify accuracy", "dataset"),
        Task("gsm8k_platinum", "GSM8K-Platinum (evaluation only): scored exactly as gsm8k", "eval_only"),
        Task(
            "math",
            "MATH / MATH-500: gold = last \\boxed{} (nested braces matched) or the bare answer; math-verify",
            "dataset",
        ),
        Task(
            "chemistry",
            "SciKnowEval L3 Chemistry: one letter A-D, compared directly (App. A.1)",
            "dataset",
        ),
        Task("arith", "synthetic 2-digit arithmetic: integer in the <answer> block equals the gold", "synthetic", True),
        Task(
            "arith_hard",
            "synthetic 3-digit arithmetic: integer in the <answer> block equals the gold",
            "synthetic",
            True,
        ),
        Task("arith_mc", "synthetic arithmetic as 4-option multiple choice: letter A-D", "synthetic", True),
        Task(
            "arith_add",
            "synthetic 2-digit addition only (arith's additions, 1,000 held out as its test set): integer in "
            "the <answer> block equals the gold",
            "synthetic",
            True,
        ),
        Task(
            "arith_heldout",
            "synthetic 2-digit arithmetic held out of every training set (evaluation only; the tiny "
            "analogue of GSM8K-Platinum): scored exactly as arith",
            "eval_only",
            True,
        ),
    )
}
TASK_NAMES = tuple(TASKS)
TASK_DESCRIPTIONS = {name: t.description for name, t in TASKS.items()}
SYNTHETIC_TASKS = tuple(name for name, t in TASKS.items() if t.kind == "synthetic")
EVAL_ONLY_TASKS = tuple(name for name, t in TASKS.items() if t.kind == "eval_only")
GENERATED_TASKS = tuple(name for name, t in TASKS.items() if t.generated)
TRAIN_TASKS = tuple(name for name in TASKS if name not in EVAL_ONLY_TASKS)
TRANSFER_ANALOGUES: dict[str, str] = {"gsm8k_platinum": "arith_heldout", "math": "arith_hard"}
"""Fig. 7's other test sets (paper name -> the tiny/smoke analogue that experiments/tiny_a.yaml and
tiny_b.yaml evaluate): a second test set of the training task's kind (GSM8K-Platinum) and a harder
held-out task (MATH-500)."""


# ----------------------------------------------------------------------------------------------
# the (rule, n, m) check


def check_rule(rule: str, n: int, m: int, rules: Iterable[str] = RULES) -> None:
    """Check a (rule, n, m) triple against the project's rules (:func:`pods.base.check_rule`)."""
    _base.check_rule(rule, n, m, rules)


# ----------------------------------------------------------------------------------------------
# run names

# dotted key -> short name in run names (and in the run sheet's `extra` column). Order = order in
# names. Keys with no entry do not change what is learned (pods_repro.config.names.NAME_EXCLUDED) or are the
# head of the name (rollout.rule/n/m).
NAME_VOCAB: dict[str, str] = {
    "policy.model": "model",
    "policy.dtype": "dtype",
    "policy.load_in_4bit": "q4",
    "policy.lora.enabled": "lora",
    "policy.lora.rank": "r",
    "policy.lora.alpha": "alpha",
    "policy.lora.dropout": "ldrop",
    "policy.lora.targets": "ltgt",
    "task.name": "task",
    "task.train": "train",
    "task.test": "test",
    "task.prompt_style": "prompt",
    "task.max_prompt_length": "plen",
    "task.reward": "rew",
    "rollout.normalize": "norm",
    "rollout.prompts_per_step": "pps",
    "rollout.temperature": "temp",
    "rollout.top_p": "topp",
    "rollout.max_completion_length": "len",
    "rollout.backend": "gen",
    "optim.optimizer": "opt",
    "optim.lr": "lr",
    "optim.scheduler": "sched",
    "optim.scheduler_steps": "schedsteps",
    "optim.warmup_ratio": "warm",
    "optim.weight_decay": "wd",
    "optim.adam_beta1": "b1",
    "optim.adam_beta2": "b2",
    "optim.max_grad_norm": "clip",
    "optim.beta": "beta",
    "optim.epsilon": "eps",
    "optim.epsilon_high": "epshi",
    "optim.aggregation": "agg",
    "optim.grad_accum": "ga",
    "budget.max_time_s": "time",
    "budget.max_steps": "steps",
    "eval.every_s": "evals",
    "eval.every_steps": "evalsteps",
    "eval.datasets": "evalds",
    "eval.max_examples": "evaln",
    "eval.others_every": "evalothers",
    "eval.repeats": "evalrep",
    "eval.temperature": "evaltemp",
    "eval.max_completion_length": "evallen",
    "eval.noise": "evalnoise",
    # fidelity options (pods_repro.config.fidelity)
    "rollout.top_k": "topk",
    "rollout.vllm_is_correction": "isc",
    "optim.logprob_temperature": "lpt",
    "task.math_gold": "gold",
    "task.reward_noise": "noise",
    "rollout.filter": "filt",
    "rollout.refill_max_rounds": "refill",
    "rollout.skip_after": "skipk",
    "rollout.skip_prob": "skipp",
    "eval.metric": "evalmetric",
}
SHORT_KEYS: dict[str, str] = {short: key for key, short in NAME_VOCAB.items()}
"""Short name -> dotted trainer key (the sheet's `extra` tokens, e.g. ga~16 -> optim.grad_accum=16)."""
RUN_NAME_PATTERN = r"sel~[a-z_]+_n~\d+_m~\d+(?:_[a-z0-9]+~[^_/~]+)*"


def format_run_name(rule: str, n: int, m: int, extra: str | Iterable[str] = ()) -> str:
    """``sel~{rule}_n~{n}_m~{m}[_{short}~{value}...]``: the one run-name formatter.

    `extra`: the ``short~value`` tokens, as a sequence or already joined by ``_`` (the sheet's
    `extra` column). pods_repro.config.run_name computes the tokens from a config; this joins them.
    """
    tokens = [t for t in (extra.split("_") if isinstance(extra, str) else extra) if t]
    return "_".join([f"sel~{rule}", f"n~{n}", f"m~{m}", *tokens])


# ----------------------------------------------------------------------------------------------
# the paper settings


@dataclass(frozen=True)
class Released:
    """Where a setting's runs are in the authors' released results/ folder (docs/paper.md#released-logs).

    kind ``json``: per-run files ``Instruct-{token}[-MaxR|-Rand]-512-{n}-{m}[-beta]-Run{k}.json`` with
    checkpoints at (i+1) x grid, plus `base_file` (the untrained model, t = 0).
    kind ``wandb``: ``{token}-acc.csv`` and ``{token}-length.csv`` wandb exports, evaluations
    aligned to the nearest of 0, grid, ..., horizon.
    """

    kind: str
    token: str
    base_file: str | None = None


@dataclass(frozen=True)
class Setting:
    """One paper setting (Table 1): everything the workflow, the analysis and the figures know of it."""

    letter: str
    name: str
    """experiments/{name}.yaml: the paper-scale config (its `setting:`); released curves carry it."""
    title: str
    """Figure title of the paper-scale setting, e.g. "GSM8K, Qwen2.5-3B, 1 GPU"."""
    analogue_title: str
    """Figure title of its tiny/smoke analogue, e.g. "2-digit arithmetic, Llama layout"."""
    metric: str
    """Metric of its Fig. 3 curve and Table 3 entry (docs/paper.md#evaluation-protocol)."""
    dataset: str
    """Test set it is judged on at paper scale (pods_repro.data name)."""
    grid_s: int
    """Paper evaluation grid (training seconds between evaluations)."""
    horizon_s: int
    """Paper plot horizon (training seconds)."""
    paper_speedup: float
    """The paper's Table 3 speed-up."""
    experiments: Mapping[str, str] = field(default_factory=dict)
    """Scale -> experiments/*.yaml (paths from the repository root)."""
    released: Released | None = None


SETTINGS: dict[str, Setting] = {
    s.letter: s
    for s in (
        Setting(
            "a", "a_gsm8k_qwen3b", "GSM8K, Qwen2.5-3B, 1 GPU", "2-digit arithmetic, Llama layout", "accuracy", "gsm8k",
            1800, 21600, 2.0,
            {"paper": "experiments/a_gsm8k_qwen3b.yaml", "tiny": "experiments/tiny_a.yaml",
             "smoke": "experiments/tiny_a.yaml"},
            Released("json", "GSM8K", "base-qwen.json"),
        ),
        Setting(
            "b", "b_gsm8k_llama3b", "GSM8K, Llama-3.2-3B, 1 GPU", "2-digit arithmetic, Qwen2 layout, KL",
            "both_accuracy", "gsm8k", 600, 5400, 3.0,
            {"paper": "experiments/b_gsm8k_llama3b.yaml", "tiny": "experiments/tiny_b.yaml",
             "smoke": "experiments/tiny_b.yaml"},
            Released("json", "Llama", "base-llama.json"),
        ),
        Setting(
            "c", "c_math_qwen3b", "MATH, Qwen2.5-3B, 1 GPU", "3-digit arithmetic, Llama layout", "accuracy", "math",
            1800, 21600, 2.0,
            {"paper": "experiments/c_math_qwen3b.yaml", "tiny": "experiments/tiny_c.yaml",
             "smoke": "experiments/tiny_c.yaml"},
            Released("json", "MATH-NF", "base-qwen.json"),
        ),
        Setting(
            "d", "d_chem_qwen3b", "Chemistry, Qwen2.5-3B, 1 GPU", "arithmetic multiple choice, Llama layout",
            "accuracy", "chemistry", 1800, 43200, 1.8,
            {"paper": "experiments/d_chem_qwen3b.yaml", "tiny": "experiments/tiny_d.yaml",
             "smoke": "experiments/tiny_d.yaml"},
        ),
        Setting(
            "e", "e_gsm8k_qwen3b_8gpu", "GSM8K, Qwen2.5-3B, 8 GPUs", "2-digit arithmetic, Llama layout, GA vs PODS",
            "accuracy", "gsm8k", 120, 1800, 1.7,
            {"paper": "experiments/e_gsm8k_qwen3b_8gpu.yaml", "tiny": "experiments/tiny_e.yaml",
             "smoke": "experiments/tiny_e.yaml"},
            Released("wandb", "h100s"),
        ),
        Setting(
            "f", "f_gsm8k_qwen7b_8gpu", "GSM8K, Qwen2.5-7B, 8 GPUs", "2-digit arithmetic, Qwen2 layout, GA vs PODS",
            "accuracy", "gsm8k", 120, 1800, 1.7,
            {"paper": "experiments/f_gsm8k_qwen7b_8gpu.yaml", "tiny": "experiments/tiny_f.yaml",
             "smoke": "experiments/tiny_f.yaml"},
            Released("wandb", "a100s"),
        ),
    )
}  # fmt: skip
"""Setting letter -> its record. Add a setting by adding a record (docs/design.md)."""


def setting_names() -> dict[str, str]:
    """Setting name (an experiment YAML's stem, = its `setting:`) -> letter, over every scale."""
    out = {}
    for s in SETTINGS.values():
        out[s.name] = s.letter
        for path in s.experiments.values():
            out.setdefault(Path(path).stem, s.letter)
    return out


def setting_title(letter: str, name: str = "") -> str:
    """Figure title "(a) GSM8K, Qwen2.5-3B, 1 GPU" for the paper name, the analogue title for a
    tiny/smoke experiment of the setting, else the run's own name."""
    s = SETTINGS.get(letter)
    if s is None or not name:
        return f"({letter}) {name}".rstrip()
    if name == s.name:
        return f"({letter}) {s.title}"
    if name in {Path(p).stem for p in s.experiments.values()}:
        return f"({letter}) {s.analogue_title}"
    return f"({letter}) {name}"


def setting_metric(letter: str) -> str:
    """The metric of a setting's Fig. 3 / Table 3 entry (accuracy for settings without a record)."""
    s = SETTINGS.get(letter)
    return s.metric if s is not None else "accuracy"


# ----------------------------------------------------------------------------------------------
# the run sheet

SHEET_COLUMNS = ("setting", "rule", "n", "m", "extra", "role", "seeds", "figures", "note")
_EXTRA = re.compile(r"^[a-z0-9]+~[^_/~\s]+$")


class SheetError(ValueError):
    """A bad run sheet; the message names the file, the line and the fix."""


@dataclass(frozen=True)
class Arm:
    """One row of a run sheet: an arm (setting, rule, n, m, extra overrides), trained per seed."""

    setting: str
    rule: str
    n: int
    m: int
    extra: str = ""
    role: str = ""
    seeds: str = ""
    figures: str = ""
    note: str = ""
    line: int = 0

    @property
    def run_name(self) -> str:
        return format_run_name(self.rule, self.n, self.m, self.extra)

    @property
    def overrides(self) -> dict[str, str]:
        """Dotted trainer overrides of this arm: rollout.rule/n/m, then the `extra` tokens."""
        out = {"rollout.rule": self.rule, "rollout.n": str(self.n), "rollout.m": str(self.m)}
        for token in filter(None, self.extra.split("_")):
            short, value = token.split("~", 1)
            out[SHORT_KEYS[short]] = value
        return out

    def extra_value(self, dotted: str) -> str | None:
        return self.overrides.get(dotted) if dotted in SHORT_KEYS.values() else None


def read_sheet(path: str | Path, settings: Mapping[str, Setting] | None = None) -> list[Arm]:
    """Parse and check a run sheet (TSV, columns SHEET_COLUMNS; config/runs.schema.yaml).

    Checks: every column present; n and m whole numbers; the (rule, n, m) check; `extra` tokens
    ``short~value`` with short names of NAME_VOCAB; a setting with a record; every arm once; per
    setting either no role or exactly one `baseline` (n == m) and one `pods` (n > m) row.
    Raises :class:`SheetError` naming the file and line.
    """
    path = Path(path)
    settings = SETTINGS if settings is None else settings
    if not path.is_file():
        raise SheetError(f"run sheet {path} not found: write a TSV with columns {', '.join(SHEET_COLUMNS)}")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        missing = [c for c in SHEET_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise SheetError(f"{path}: missing columns {missing}; the header is {', '.join(SHEET_COLUMNS)}")
        rows = list(reader)
    arms, seen, roles = [], {}, {}
    for i, raw in enumerate(rows, start=2):  # line 1 is the header
        where = f"{path} line {i}"
        if None in raw or any(v is None for v in raw.values()):
            raise SheetError(f"{where}: expected {len(reader.fieldnames)} tab-separated cells")
        for column in ("n", "m"):
            if not raw[column].isdigit():
                raise SheetError(f"{where}: {column}={raw[column]!r} is not a whole number of rollouts")
        arm = Arm(**{c: raw[c] for c in SHEET_COLUMNS if c not in ("n", "m")}, n=int(raw["n"]), m=int(raw["m"]), line=i)
        if arm.setting not in settings:
            raise SheetError(
                f"{where}: setting {arm.setting!r} has no record in pods_repro.registry.SETTINGS "
                f"(known: {', '.join(settings)}); add one (docs/design.md, 'Add a setting')"
            )
        try:
            check_rule(arm.rule, arm.n, arm.m)
        except RuleError as err:
            raise SheetError(f"{where}: {err.problem}; {err.fix}") from None
        for token in filter(None, arm.extra.split("_")):
            key = token.split("~")[0]
            if not _EXTRA.match(token) or key not in SHORT_KEYS:
                raise SheetError(
                    f"{where}: extra key {key!r} unknown; known: {sorted(SHORT_KEYS)} "
                    "(short names of pods_repro.registry.NAME_VOCAB, e.g. ga~16)"
                )
        if arm.role not in ("", *ROLES):
            raise SheetError(f"{where}: role {arm.role!r} is not one of {', '.join(ROLES)} or empty")
        if arm.role == "baseline" and arm.n != arm.m:
            raise SheetError(f"{where}: the baseline arm must be GRPO (n == m), got n={arm.n}, m={arm.m}")
        if arm.role == "pods" and not arm.n > arm.m:
            raise SheetError(f"{where}: the pods arm must down-sample (n > m), got n={arm.n}, m={arm.m}")
        key = (arm.setting, arm.run_name)
        if key in seen:
            raise SheetError(
                f"{where} repeats the run of line {seen[key]} ({arm.setting}/{arm.run_name}): "
                "declare each run once and list every figure it feeds in its `figures` column"
            )
        seen[key] = i
        if arm.role:
            if (arm.setting, arm.role) in roles:
                raise SheetError(
                    f"{where}: setting {arm.setting} already has a {arm.role} arm (line "
                    f"{roles[(arm.setting, arm.role)]}); mark one baseline and one pods row per setting"
                )
            roles[(arm.setting, arm.role)] = i
        arms.append(arm)
    for setting in sorted({s for s, _ in roles}):
        for role in ROLES:
            if (setting, role) not in roles:
                raise SheetError(
                    f"{path}: setting {setting} has no `{role}` row: its main comparison needs one "
                    f"baseline and one pods row (column `role`)"
                )
    return arms


def main_arms(arms: Iterable[Arm]) -> dict[str, dict[str, Arm]]:
    """Setting -> {"baseline": Arm, "pods": Arm} of each setting's main comparison."""
    out: dict[str, dict[str, Arm]] = {}
    for arm in arms:
        if arm.role:
            out.setdefault(arm.setting, {})[arm.role] = arm
    return out
