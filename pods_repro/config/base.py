"""The machinery under every config section: :class:`ConfigError` and field type coercion.

Torch-free and free of the schema itself, so :mod:`pods_repro.config.schema`, :mod:`pods_repro.config.trl`,
:mod:`pods_repro.config.load`, :mod:`pods_repro.config.names` and :mod:`pods_repro.config.help` can all import it
(the overview of the config system is :mod:`pods_repro.config`'s docstring).
"""

from __future__ import annotations

import difflib
import functools
import math
import re
import types
from collections.abc import Iterable, Mapping
from dataclasses import fields, is_dataclass
from typing import Any, Union, get_args, get_origin, get_type_hints

import yaml


class ConfigError(ValueError):
    """A bad config value; the message names the dotted key, the bad value and the fix."""

    def __init__(self, key: str, value: Any = None, problem: str | None = None, fix: str | None = None):
        if problem is None:  # ConfigError("a whole message") from code outside the config modules
            self.key, self.value, self.problem, self.fix = None, _NO_VALUE, key, None
            super().__init__(key)
            return
        self.key, self.value, self.problem, self.fix = key, value, problem, fix
        shown = "" if value is _NO_VALUE else f"={_show(value)}"
        super().__init__(f"{key}{shown}: {problem}. Fix: {fix}")

    def __reduce__(self):  # picklable across processes (the message survives, the parts need not)
        return (type(self), (str(self),))


_NO_VALUE = object()


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, tuple):
        value = list(value)
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()


# ----------------------------------------------------------------------------------------------
# Type coercion


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _optional(tp: Any) -> tuple[Any, bool]:
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return args[0], len(args) < len(get_args(tp))
    return tp, False


def _type_name(tp: Any) -> str:
    if get_origin(tp) is tuple:
        return "a list of strings"
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string"}.get(tp, str(tp))


_FLOAT_TEXT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _coerce(key: str, value: Any, tp: Any) -> Any:
    base, optional = _optional(tp)
    if value is None:
        if optional:
            return None
        raise ConfigError(key, value, "must not be null", f"give {_type_name(base)}, or delete the key for its default")
    if is_dataclass(base):
        if isinstance(value, base):
            return value
        raise ConfigError(
            key,
            value,
            "is a section, not a single value",
            f"set its fields as {key}.FIELD=VALUE (fields: {', '.join(f.name for f in fields(base))})",
        )
    wrong = ConfigError(
        key,
        value,
        f"must be {_type_name(base)}{' or null' if optional else ''}",
        f"write {_type_name(base)}, e.g. {key}={_example(base)}",
    )
    if base is bool:
        if isinstance(value, bool):
            return value
        raise wrong
    if base is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise wrong
    if base is float:
        if isinstance(value, str) and _FLOAT_TEXT.match(value.strip()):
            value = float(value)  # PyYAML reads "1e-6" (no dot) as a string
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise ConfigError(key, value, "must be finite", "write a finite number")
            return float(value)
        raise wrong
    if base is str:
        if isinstance(value, str):
            return value
        raise wrong
    if get_origin(base) is dict or base is dict:
        if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
            return dict(value)
        raise ConfigError(
            key,
            value,
            "must be a mapping of field names to values",
            f"write it as a YAML mapping, e.g. {key}: {{report_to: [tensorboard]}}",
        )
    if get_origin(base) is tuple:
        if isinstance(value, str):
            value = [value]  # a bare name for a list field means a list of one
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise wrong
    raise TypeError(f"unsupported config field type {tp!r} for {key}")  # a bug in the config schema


def _example(tp: Any) -> str:
    if get_origin(tp) is tuple:
        return "[gsm8k,math]"
    return {int: "16", float: "1e-6", bool: "true", str: "NAME"}.get(tp, "...")


# ----------------------------------------------------------------------------------------------
# Small helpers shared by the checks, the loader and the run names


def _closest_hint(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def get_key(cfg: Any, key: str) -> Any:
    for part in key.split("."):
        cfg = getattr(cfg, part)
    return cfg
