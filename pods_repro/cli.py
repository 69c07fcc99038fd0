"""Command line: ``pods`` (console script) or ``python -m pods_repro``.

The details: docs/design.md, "Module notes" (`pods_repro/cli.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from pods_repro.config import (
    ConfigError,
    apply_overrides,
    describe_keys,
    format_keys,
    from_dict,
    load_config,
    resolve_run_dir,
    to_dict,
    validate,
)
from pods_repro.data import DataError
from pods_repro.kernels import KernelsError, pin_cpu_kernels
from pods_repro.runlog import DiskWriteError, RunDirError, RunLogger

BENCH_DIR = Path(__file__).resolve().parent / "bench"  # in the package: works from a wheel too

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2
EXIT_BROKEN_PIPE = 128 + 13  # what a shell reports for a writer killed by SIGPIPE


class UsageError(Exception):
    """Bad command-line input found after argument parsing (exit 2)."""


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser and the parser of each command (parsed separately, see main)."""
    ap = argparse.ArgumentParser(
        allow_abbrev=False, prog="pods", description="PODS: down-sampling rollouts in GRPO (arXiv 2504.13818)."
    )
    ap.add_argument("--version", action="version", version=version_text())
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "train",
        allow_abbrev=False,
        help="validate a config, then train one run",
        description="Validate CONFIG with the overrides, then train one run; prints the run directory.",
        epilog=_KEYS_EPILOG + format_keys(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("config", help=_CONFIG_HELP)
    p.add_argument("overrides", nargs="*", default=[], metavar="key=value", help="dotted overrides, e.g. rollout.n=64")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="validate (skipping machine checks, as validate --paper) and print; do not train",
    )
    p.add_argument("--scale", metavar="NAME", help=_SCALE_HELP)

    p = sub.add_parser("eval", allow_abbrev=False, help="evaluate a finished run's final policy")
    p.add_argument("run_dir", help="a run directory written by pods train")
    p.add_argument(
        "overrides", nargs="*", default=[], metavar="key=value", help="e.g. eval.repeats=1 eval.max_examples=100"
    )

    p = sub.add_parser(
        "validate",
        allow_abbrev=False,
        help="print the resolved config and its run directory",
        epilog=_KEYS_EPILOG + "(all keys: pods config)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("config", help=_CONFIG_HELP)
    p.add_argument("overrides", nargs="*", default=[], metavar="key=value")
    p.add_argument(
        "--paper", action="store_true", help="skip checks against this machine (for GPU configs on a CPU-only machine)"
    )
    p.add_argument("--scale", metavar="NAME", help=_SCALE_HELP)

    sub.add_parser("list", allow_abbrev=False, help="the shipped experiment configs, one line each")

    p = sub.add_parser("config", allow_abbrev=False, help="list every config key with its type, default and meaning")
    p.add_argument("section", nargs="?", default="", help="only keys under this section or key, e.g. rollout")

    # Pass-through commands: everything after the name goes to the script/module untouched.
    sub.add_parser(
        "bench", allow_abbrev=False, help="run a benchmark (pods_repro/bench/): pods bench NAME [ARGS]", add_help=False
    )
    sub.add_parser(
        "released",
        allow_abbrev=False,
        help="re-analyse the authors' released logs (pods_repro.analysis released)",
        add_help=False,
    )
    sub.add_parser("analysis", allow_abbrev=False, help="run a pods_repro.analysis subcommand", add_help=False)
    sub.add_parser(
        "quickstart",
        help="both arms of the tiny (a) comparison on 5 seeds, their table, figure and verdict: minutes on a CPU",
        add_help=False,
    )
    sub.add_parser(
        "cost", help="GPU-hours of a scale (run sheet x seeds x budgets): pods cost [--scale NAME]", add_help=False
    )
    return ap, dict(sub.choices)


_CONFIG_HELP = "a shipped experiment's name (tiny_a; pods list names them all) or the path of a YAML config"

_SCALE_HELP = (
    "train the workflow's run at this scale (tiny, smoke, paper): the scale's overrides from config/config.yaml "
    "and the run sheet's arm, as the workflow's job passes them, and its run directory"
)

_KEYS_EPILOG = """overrides: dotted key=value (values are YAML: rollout.n=64, eval.datasets=[gsm8k,math],
policy.attn_implementation=null), or TRL-style --rollout.n 64 / --rollout.n=64. Extra TRL GRPOConfig
fields go under trl. (trl.report_to=[tensorboard], trl.log_completions=true); fields the package sets
from its own options are refused with the option to use.

config keys (type = default):
"""


def version_text() -> str:
    """``pods X.Y.Z (python ..., torch ..., trl ..., transformers ...)``: read from the installed metadata
    (no heavy import)."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    from pods import __version__

    parts = [f"python {platform.python_version()}"]
    for pkg in ("torch", "trl", "transformers"):
        try:
            parts.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            parts.append(f"{pkg} not installed")
    return f"pods {__version__} ({', '.join(parts)})"


def experiment_descriptions() -> list[tuple[str, str]]:
    """(name, first line of its header comment) of every shipped experiment YAML, sorted by name."""
    from pods_repro import registry

    folder = registry.repo_file("experiments")
    out = []
    for path in sorted(folder.glob("*.yaml")):
        words: list[str] = []
        for line in path.read_text(encoding="utf-8").splitlines()[:3]:  # the first sentence of the header
            if not line.startswith("#"):
                break
            words.append(line[1:].strip())
            if words[-1].endswith("."):
                break
        text = re.sub(r"\s*\(arXiv [^)]*\)", "", " ".join(words)).rstrip(" .")  # drop the paper citation
        out.append((path.stem, text))
    return out


def _cmd_list(args: argparse.Namespace) -> int:
    from pods_repro import registry

    scales_of: dict[str, list[str]] = {}
    for s in registry.SETTINGS.values():
        for scale, path in s.experiments.items():
            scales_of.setdefault(Path(path).stem, []).append(f"{scale} ({s.letter})")
    rows = experiment_descriptions()
    width = max(len(name) for name, _ in rows)
    for name, text in rows:
        where = f" [--scale {', '.join(scales_of[name])}]" if name in scales_of else ""
        print(f"{name:<{width}}  {text}{where}")
    return EXIT_OK


def _cmd_config(args: argparse.Namespace) -> int:
    if args.section and not describe_keys(args.section):
        sections = sorted({r["key"] for r in describe_keys() if r["type"] == "section"})
        raise UsageError(f"no config key or section {args.section!r}. Fix: use one of {', '.join(sections)}")
    print(format_keys(args.section))
    return EXIT_OK


def _flag_overrides(argv: Sequence[str]) -> list[str]:
    """TRL-style ``--rollout.n 8`` and ``--rollout.n=8`` -> ``rollout.n=8`` (other arguments untouched).

    A ``--NAME`` is a config override when NAME is a config key (or under ``trl.``); a bool key without
    a value (``--policy.lora.enabled``) means true.
    """
    types = {r["key"]: r["type"] for r in describe_keys()}
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        name, sep, value = tok[2:].partition("=") if tok.startswith("--") else ("", "", "")
        if not name or not (name in types or name.startswith("trl.")) or types.get(name) == "section":
            out.append(tok)
            i += 1
            continue
        if not sep:
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if nxt is not None and not nxt.startswith("--"):
                value, i = nxt, i + 1
            elif types.get(name) == "bool":
                value = "true"
            else:
                raise UsageError(f"--{name} needs a value. Fix: write --{name} VALUE, --{name}=VALUE or {name}=VALUE")
        out.append(f"{name}={value}")
        i += 1
    return out


def _refuse_repeated_keys(overrides: Sequence[str]) -> None:
    """A key given twice with two values on the command line is a mistake to name, not a choice to make
    silently (code that composes overrides, e.g. a base list plus extras, still gets the last value)."""
    seen: dict[str, str] = {}
    for item in overrides:
        key, sep, text = item.partition("=")
        key, text = key.strip(), text.strip()
        if sep and key in seen and seen[key] != text:
            raise UsageError(
                f"{key} is given twice on the command line ({key}={seen[key]} and {key}={text}). "
                f"Fix: give {key} once, with the value you mean"
            )
        seen.setdefault(key, text)


def _print_config(cfg, header: str) -> None:
    import yaml

    print(f"# {header}")
    print(yaml.safe_dump(to_dict(cfg), sort_keys=False, default_flow_style=None, width=100), end="")
    print(f"# run_dir: {resolve_run_dir(cfg)}")


def _scale_overrides(args: argparse.Namespace) -> list[str]:
    """The command line's overrides, with the workflow's run at ``--scale`` added (pods_repro.config.scales)."""
    if not args.scale:
        return list(args.overrides)
    from pods_repro.config.scales import workflow_overrides

    overrides, note = workflow_overrides(args.config, args.overrides, args.scale)
    print(f"pods: {note}", file=sys.stderr)
    return overrides


def _cmd_train(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, _scale_overrides(args), check_machine=not args.dry_run)
    if args.dry_run:
        _print_config(cfg, f"resolved from {args.config} (dry run: machine checks skipped; nothing trained)")
        return EXIT_OK
    from pods_repro.run import train  # heavy (torch, transformers, TRL): only after validation

    run_dir = train(cfg)
    print(run_dir)
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, _scale_overrides(args), check_machine=not args.paper)
    mode = "machine checks skipped (--paper)" if args.paper else "valid on this machine"
    _print_config(cfg, f"resolved from {args.config}: {mode}")
    return EXIT_OK


def _cmd_eval(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    cfg_path = run_dir / "config.json"
    if not cfg_path.is_file():
        raise UsageError(
            f"{run_dir} has no config.json, so it is not a run directory. Fix: pass a directory "
            "written by `pods train` (results/runs/{setting}/{run_name}/seed~{seed})"
        )
    raw = {k: v for k, v in (RunLogger(run_dir).read_config() or {}).items() if k != "meta"}  # names damage
    # Check the overrides (and that this machine can run the result) before loading any model.
    cfg = apply_overrides(from_dict(raw), args.overrides)
    validate(cfg)
    from pods_repro.evaluation import evaluate  # loads models, not TRL

    try:
        result = evaluate(run_dir, args.overrides)
    except FileNotFoundError as e:  # e.g. the run has not finished: no final policy yet
        raise UsageError(str(e)) from None
    print(json.dumps(result, indent=1, default=str))
    return EXIT_OK


def _bench_script(name: str) -> Path:
    bench = BENCH_DIR / f"bench_{name}.py"
    return bench if bench.is_file() else BENCH_DIR / f"{name}.py"


def _cmd_bench(rest: Sequence[str]) -> int:
    from pods_repro.bench import child_env

    available = sorted(p.stem.removeprefix("bench_") for p in BENCH_DIR.glob("*.py") if not p.stem.startswith("_"))
    if not rest or rest[0] in ("-h", "--help"):
        print(
            f"usage: pods bench NAME [ARGS ...]\navailable: {', '.join(available) or '(none)'}",
            file=sys.stdout if rest else sys.stderr,
        )
        return EXIT_OK if rest else EXIT_BAD_INPUT
    name, args = rest[0], list(rest[1:])
    script = _bench_script(name)
    if name.startswith("_") or not script.is_file():
        raise UsageError(
            f"no benchmark named {name!r} ({script} does not exist). "
            f"Fix: use one of {', '.join(available) or '(none yet)'}"
        )
    # By path, with this copy of pods first on PYTHONPATH (its imports are absolute).
    return subprocess.call([sys.executable, str(script), *args], env=child_env())


def _cmd_analysis(rest: Sequence[str], prog: str = "pods analysis") -> int:
    from pods_repro.analysis.cli import main as analysis_main

    return int(analysis_main(list(rest), prog=prog) or 0)


def _stdout_to_devnull() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor behind sys.stdout (a test's capture): nothing to flush
        pass


def _one_paragraph(text: str) -> str:
    return " ".join(str(text).split())


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `pods` command; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        pin_cpu_kernels()  # before torch's first operation: the same bits on AVX2 machines of one vendor (pods_repro.kernels)
    except KernelsError as e:  # an unknown ATEN_CPU_CAPABILITY, MKL_CBWR or PODS_KERNELS; the message says the fix
        print(f"pods: {_one_paragraph(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        # Pass-through commands keep their arguments verbatim (argparse would eat their --flags).
        if argv and argv[0] == "bench":
            return _cmd_bench(argv[1:])
        if argv and argv[0] == "released":
            return _cmd_analysis(["released", *argv[1:]], prog="pods")
        if argv and argv[0] == "analysis":
            return _cmd_analysis(argv[1:], prog="pods analysis")
        if argv and argv[0] == "quickstart":
            from pods_repro.quickstart import main as quickstart_main

            return quickstart_main(argv[1:])
        if argv and argv[0] == "cost":
            from pods_repro.analysis.cost import main as cost_main

            return cost_main(argv[1:])
        # Each command's parser on its own: parse_intermixed_args (overrides and --flags in any
        # order) does not work through subparsers. argparse exits 2 itself on bad usage.
        top, commands = _parser()
        if not argv or argv[0] not in commands:
            top.parse_args(argv)  # prints help (exit 0) or the usage error (exit 2)
        rest = _flag_overrides(argv[1:]) if argv[0] in ("train", "eval", "validate") else argv[1:]
        args = commands[argv[0]].parse_intermixed_args(rest)
        args.cmd = argv[0]
        if args.cmd in ("train", "eval", "validate"):
            _refuse_repeated_keys(args.overrides)
        handler = {
            "train": _cmd_train,
            "eval": _cmd_eval,
            "validate": _cmd_validate,
            "config": _cmd_config,
            "list": _cmd_list,
        }[args.cmd]
        return handler(args)
    except ConfigError as e:
        print(f"pods: config error: {_one_paragraph(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (UsageError, RunDirError) as e:
        print(f"pods: {_one_paragraph(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except DataError as e:  # a task file or data option the run cannot use; the message says the fix
        print(f"pods: data error: {_one_paragraph(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except DiskWriteError as e:  # the message says what and where; a traceback would bury it
        print(f"pods: {_one_paragraph(e)}", file=sys.stderr)
        return EXIT_FAIL
    except KeyboardInterrupt:
        print("pods: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of stdout went away (`pods config | head`): nothing more can be shown, so stop quietly.
        # stdout is pointed at devnull so that the interpreter's final flush of the buffer fails silently too.
        _stdout_to_devnull()
        return EXIT_BROKEN_PIPE
    except Exception:  # a real failure: keep the traceback, it is what one needs to debug it
        traceback.print_exc()
        return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
