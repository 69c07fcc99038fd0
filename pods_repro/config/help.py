"""The key listing behind ``pods config`` and ``pods train --help``: every key, its type, default and doc.

The doc of a field is the docstring right below it in :mod:`pods_repro.config.schema`, read from the source.
"""

from __future__ import annotations

import functools
from dataclasses import fields, is_dataclass
from typing import Any, get_origin

from pods_repro.config.base import _optional, _show, field_types
from pods_repro.config.schema import TrainConfig

# ----------------------------------------------------------------------------------------------
# Help: every key with its type, default and one-line doc (from the docstring under each field)


@functools.cache
def _field_docs(cls: type) -> dict[str, str]:
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body  # the class body
    docs = {}
    for stmt, nxt in zip(body, body[1:] + [None], strict=True):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
                docs[stmt.target.id] = " ".join(nxt.value.value.split())
    return docs


def _type_label(tp: Any) -> str:
    base, optional = _optional(tp)
    if get_origin(base) is tuple:
        label = "list[str]"
    elif get_origin(base) is dict or base is dict:
        label = "mapping"
    else:
        label = getattr(base, "__name__", str(base))
    return f"{label} | null" if optional else label


def _choices() -> dict[str, str]:
    """Keys whose doc ends with their valid names, read from the registry (never a stale copy in a docstring)."""
    from pods_repro import registry

    return {"rollout.rule": f"Rules: {', '.join(registry.RULES)}."}


def describe_keys(prefix: str = "") -> list[dict[str, Any]]:
    """Every config key under ``prefix`` (all when empty): ``{key, type, default, doc}``, in file order.

    Sections are listed too (type ``section``); ``doc`` is the first sentence-line of the field's docstring.
    """
    out: list[dict[str, Any]] = []

    def walk(cls: type, inst: Any, pre: str) -> None:
        hints, docs = field_types(cls), _field_docs(cls)
        for f in fields(cls):
            key, tp = pre + f.name, hints[f.name]
            value = getattr(inst, f.name)
            if is_dataclass(tp):
                out.append({"key": key, "type": "section", "default": None, "doc": docs.get(f.name, "")})
                walk(tp, value, key + ".")
            else:
                shown = _show(list(value) if isinstance(value, tuple) else value)
                doc = " ".join(d for d in (docs.get(f.name, ""), choices.get(key, "")) if d)
                out.append({"key": key, "type": _type_label(tp), "default": shown, "doc": doc})

    choices = _choices()
    walk(TrainConfig, TrainConfig(), "")
    if prefix:
        out = [r for r in out if r["key"] == prefix or r["key"].startswith(prefix.rstrip(".") + ".")]
    return out


def format_keys(prefix: str = "", width: int = 100) -> str:
    """``describe_keys`` as text: ``key  type = default`` then the doc, indented (``pods config``)."""
    import textwrap

    lines = []
    for row in describe_keys(prefix):
        if row["type"] == "section":
            lines.append(f"{row['key']}:  (section) {row['doc']}")
            continue
        lines.append(f"  {row['key']}  {row['type']} = {row['default']}")
        lines.extend(textwrap.wrap(row["doc"], width=width, initial_indent="      ", subsequent_indent="      "))
    return "\n".join(lines)
