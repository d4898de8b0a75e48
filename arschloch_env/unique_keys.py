"""YAML and JSON reading that refuses a key given twice in one mapping: both formats keep the
last silently, so a config or rules file that says ``algo: ppo-vec`` and later ``algo: ppo``
would run with the one the reader did not see last."""

from __future__ import annotations

import json
from typing import Any

import yaml


class UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a repeated key (a ``yaml.YAMLError`` naming both lines)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                break  # an unhashable key: super() says so, as a YAMLError
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping", node.start_mark,
                    f"found the key {key!r} twice; give each key once", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


TOO_DEEP = "nested too deeply to read (lists or mappings inside each other beyond Python's " \
           "recursion limit)"


def load_yaml(text: str) -> Any:
    """``yaml.safe_load``, refusing a repeated key; text nested too deeply for the parser is
    a ``yaml.YAMLError`` too (the parser recurses once per level)."""
    try:
        return yaml.load(text, UniqueKeyLoader)
    except RecursionError:
        raise yaml.YAMLError(TOO_DEEP) from None


def yaml_error_line(exc: Exception) -> str:
    """A YAML error on one line: what is wrong, and where (PyYAML's own text spans several
    lines and names the file ``"<unicode string>"``)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark
        return exc.problem + (f" (line {mark.line + 1}, column {mark.column + 1})" if mark
                              else "")
    return " ".join(str(exc).split())


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # called for every object of every record line: the common case costs one dict
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"found the key {twice!r} twice; give each key once")
    return out


def load_json(text: str) -> Any:
    """``json.loads``, refusing a repeated key or text nested too deeply (``ValueError``)."""
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None


__all__ = ["UniqueKeyLoader", "load_json", "load_yaml", "yaml_error_line"]
