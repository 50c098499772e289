"""Validation errors of ctl's file models (inventory, campaign file) in ctl's own words.

pydantic reports what is wrong with a file as a list of errors, each a type code, the path
of the offending value and an English message written for Python programmers ("Input should
be a valid dictionary or instance of SecretRef"). Here every error type a ctl file can meet
becomes a sentence about the file: where (file:line, the field as `hosts.b1.interfaces[0].address`)
and what to write instead. The messages of ctl's own validators (pydantic's `value_error`) are
already ctl's words and are kept as they are.

A value is never echoed where it may be a secret (anything under a secret reference, and the
value of an unknown field: `tokne: s3cret` is the token, misspelt). Pure; base layer.
"""
from __future__ import annotations

import difflib
import types
import typing
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import BaseModel, ValidationError

# Tags pydantic adds to an error's path inside a union (`shaper.dummynet.tool`): not keys of the file.
UNION_TAGS = frozenset({"tc", "dnpipe", "dummynet", "TcShaper", "DnpipeShaper", "DummynetShaper",
                        "function-after", "function-before", "function-plain", "function-wrap",
                        "str", "int", "float", "bool", "none", "list[str]", "dict[str,str]"})
# Fields that hold a secret reference (or, mistakenly, a secret): their values are never shown.
SECRET_FIELDS = frozenset({"token", "community", "auth_key", "priv_key", "key_passphrase"})
_SHOWN_LIMIT = 40


def clean_loc(loc: Iterable[Any]) -> tuple:
    """An error's path as keys of the file (the union tags pydantic inserts removed)."""
    return tuple(x for x in loc if not (isinstance(x, str) and (x in UNION_TAGS or x.startswith("function-"))))


def field_path(loc: Iterable[Any]) -> str:
    """`hosts.b1.interfaces[0].address`; `(top level)` for the file itself."""
    out = ""
    for x in loc:
        out += f"[{x}]" if isinstance(x, int) else (f".{x}" if out else str(x))
    return out or "(top level)"


def line_of(loc: tuple, lines: Mapping[tuple, int]) -> int | None:
    """The line of the deepest key of `loc` the file has (a missing field: its parent's line)."""
    for cut in range(len(loc), -1, -1):
        if loc[:cut] in lines:
            return lines[loc[:cut]]
    return None


def _secret_loc(loc: tuple) -> bool:
    return any(isinstance(x, str) and x in SECRET_FIELDS for x in loc)


def _shown(v: Any) -> str:
    if isinstance(v, str):
        return repr(v) if len(v) <= _SHOWN_LIMIT else repr(v[:_SHOWN_LIMIT]) + "..."
    if isinstance(v, bool) or v is None:
        return {True: "true", False: "false", None: "null"}[v]
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return "a list"
    return "this value"


def _kind(v: Any) -> str:
    """What the file holds, in YAML's words."""
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "text"
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return "a list"
    if v is None:
        return "empty (null)"
    return "another kind of value"


def _choices(expected: str) -> str:
    """pydantic's `'a', 'b' or 'c'` (literal) as `a, b or c`."""
    return expected.replace("'", "")


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete types an annotation stands for (Optional, unions and Annotated opened)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for a in typing.get_args(annotation) for t in _unwrap(a)]
    return [annotation]


def model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The model class that holds the last key of `loc` (for the field names an unknown key
    is compared with); None where the path leaves the models."""
    current: list[Any] = [model]
    for key in loc:
        nxt: list[Any] = []
        for t in current:
            origin = typing.get_origin(t)
            if isinstance(t, type) and issubclass(t, BaseModel):
                f = t.model_fields.get(key) if isinstance(key, str) else None
                if f is None:
                    f = next((x for x in t.model_fields.values() if x.alias == key), None)
                if f is not None:
                    nxt += _unwrap(f.annotation)
            elif origin in (dict, Mapping) or origin is typing.Mapping:
                nxt += _unwrap(typing.get_args(t)[1])
            elif origin in (list, tuple, frozenset, set) and isinstance(key, int):
                nxt += _unwrap(typing.get_args(t)[0])
        current = nxt
    models = [t for t in current if isinstance(t, type) and issubclass(t, BaseModel)]
    return models[0] if len(models) == 1 else None


def _field_names(model: type[BaseModel] | None) -> list[str]:
    if model is None:
        return []
    return [f.alias or name for name, f in model.model_fields.items() if name != "explicit"]


def describe(err: Mapping[str, Any], root: type[BaseModel] | None = None) -> str:
    """One pydantic error as a ctl sentence (without the file, line and field)."""
    t = err.get("type", "")
    ctx = err.get("ctx") or {}
    v = err.get("input")
    loc = clean_loc(err.get("loc", ()))
    secret = _secret_loc(loc)
    name = loc[-1] if loc else ""
    if t == "value_error":
        # ctl's own validators' words; some start with the field's name, which the line names already
        msg = str(err.get("msg", "")).removeprefix("Value error, ").strip()
        return (msg.removeprefix(f"{name}: ") if isinstance(name, str) else msg) or "not accepted here"
    if t == "assertion_error":
        return str(err.get("msg", "")).removeprefix("Assertion failed, ").strip() or "not accepted here"
    if t == "missing":
        return "required field missing"
    if t == "extra_forbidden":
        known = _field_names(model_at(root, loc[:-1])) if root is not None else []
        close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.6)
        hint = f": did you mean `{close[0]}`?" if close else (f" (fields here: {', '.join(known)})" if known else "")
        return f"unknown field (typo?){hint}"
    if t in ("model_type", "model_attributes_type", "dict_type", "mapping_type"):
        cls = str(ctx.get("class_name", ""))
        if cls == "SecretRef" or secret:
            return (f"a secret is a reference, not a value: write {{env: VARIABLE}} or {{file: /absolute/path}} "
                    f"(found {_kind(v)})")
        return f"must be a mapping of fields (found {_kind(v)})"
    if t in ("list_type", "tuple_type", "set_type", "frozen_set_type"):
        return f"must be a list (found {_kind(v)})"
    if t in ("too_short", "too_long"):
        bound = ctx.get("min_length") if t == "too_short" else ctx.get("max_length")
        what = "at least" if t == "too_short" else "at most"
        return f"must have {what} {bound} item{'s' if bound != 1 else ''} (found {ctx.get('actual_length', '?')})"
    if t == "string_type":
        return f"must be text (found {_kind(v)}; quote it)"
    if t == "string_too_short":
        n = ctx.get("min_length")
        return "must not be empty" if n == 1 else f"must be at least {n} characters"
    if t == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters"
    if t == "string_pattern_mismatch":
        shown = "" if secret else f"{_shown(v)} "
        return f"{shown}does not have the form this field takes (pattern {ctx.get('pattern')})"
    if t in ("int_type", "int_parsing", "int_from_float"):
        return f"must be a whole number (found {'a fraction' if t == 'int_from_float' else _kind(v)})"
    if t in ("float_type", "float_parsing", "finite_number"):
        return "must be a finite number" if t == "finite_number" else f"must be a number (found {_kind(v)})"
    if t in ("bool_type", "bool_parsing"):
        return f"must be true or false (found {_kind(v)})"
    if t in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        words = {"greater_than": ("above", "gt"), "greater_than_equal": ("at least", "ge"),
                 "less_than": ("below", "lt"), "less_than_equal": ("at most", "le")}[t]
        shown = "" if secret else f"{_shown(v)}: "
        return f"{shown}must be {words[0]} {ctx.get(words[1])}"
    if t in ("literal_error", "enum"):
        shown = "" if secret else f"{_shown(v)} is not accepted: "
        return f"{shown}must be one of {_choices(str(ctx.get('expected', '')))}"
    if t == "union_tag_invalid":
        return (f"{ctx.get('discriminator', 'kind').strip(chr(39))} {_shown(ctx.get('tag'))} is not known: "
                f"must be one of {_choices(str(ctx.get('expected_tags', '')))}")
    if t == "union_tag_not_found":
        return f"needs `{str(ctx.get('discriminator', 'kind')).strip(chr(39))}` (which kind this is)"
    if t == "path_type":
        return f"must be a path (found {_kind(v)})"
    if t == "none_required":
        return "must be left out here"
    return f"not accepted here ({_kind(v)})"


def describe_all(exc: ValidationError, root: type[BaseModel] | None = None) -> list[tuple[tuple, str]]:
    """Every error of a validation as (path in the file, ctl sentence), in the model's order."""
    out: list[tuple[tuple, str]] = []
    for err in exc.errors(include_url=False):
        item = (clean_loc(err["loc"]), describe(err, root))
        if item not in out:
            out.append(item)
    return out


def format_first(path: Path, exc: ValidationError, lines: Mapping[tuple, int], root: type[BaseModel] | None = None,
                 more_hint: str = "") -> str:
    """One line for a file refused by its model: the first error (an unknown key first: it is
    usually the cause of a "missing" one next to it) and how many more there are."""
    errors = describe_all(exc, root)
    errors.sort(key=lambda e: not e[1].startswith("unknown field"))
    loc, msg = errors[0]
    line = line_of(loc, lines)
    more = len(errors) - 1
    tail = f" (and {more} more error{'s' if more > 1 else ''}{more_hint})" if more else ""
    return f"{path}:{line if line is not None else '?'}: {field_path(loc)}: {msg}{tail}"
