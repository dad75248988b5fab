"""MkDocs hook: the reference tables, built from the code at every build.

A page asks for a table with a marker on a line of its own, e.g.
``<!-- reference: config-options -->``; the hook replaces the marker with the table made
from the code of this checkout (``ProducerConfig`` and ``FIELD_DOCS`` in
``aiokafka_lite/config.py``, ``METRIC_DOCS`` in ``aiokafka_lite/metrics.py``), so the
reference cannot drift from the code. An unknown marker fails the build.

Registered in ``mkdocs.yml`` under ``hooks:``; ``tests/test_docs_reference.py`` checks
what it produces.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The tables describe the code of this checkout, not whatever aiokafka_lite is installed.
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import msgspec.inspect as mi  # noqa: E402

from aiokafka_lite import config as config_module  # noqa: E402
from aiokafka_lite.config import FIELD_DOCS, ProducerConfig  # noqa: E402
from aiokafka_lite.metrics import METRIC_DOCS  # noqa: E402

MARKER = re.compile(r"^<!-- reference: ([a-z-]+) -->$", re.M)
# Upper bounds this large mean "no practical limit" (Java's Long.MAX_VALUE).
_UNBOUNDED = 2**62


def _type_text(t: mi.Type) -> str:
    """A short, readable form of a field's type and range."""
    if isinstance(t, mi.UnionType):
        return " or ".join(_type_text(member) for member in t.types)
    if isinstance(t, mi.LiteralType):
        return " / ".join(f"`{v!r}`" for v in t.values)
    if isinstance(t, mi.IntType | mi.FloatType):
        kind = "int" if isinstance(t, mi.IntType) else "number"
        low, high = t.ge, t.le
        if low is not None and high is not None and high < _UNBOUNDED:
            return f"{kind} {low}..{high:_}".replace("_", ",")
        if low is not None:
            return f"{kind} ≥ {low}"
        return kind
    if isinstance(t, mi.ListType):
        return f"list of {_type_text(t.item_type)}"
    names = {mi.StrType: "str", mi.BoolType: "bool", mi.NoneType: "`None`", mi.AnyType: "object"}
    return names.get(type(t), type(t).__name__)


def config_options() -> str:
    """Every ``ProducerConfig`` option: default, type and range, meaning."""
    defaults = ProducerConfig()
    info = mi.type_info(ProducerConfig)
    assert isinstance(info, mi.StructType)
    fields = {f.name: f for f in info.fields}
    rows = ["| option | default | type | meaning |", "| --- | --- | --- | --- |"]
    for name in ProducerConfig.__struct_fields__:
        default = f"`{getattr(defaults, name)!r}`"
        kind = _type_text(fields[name].type)
        rows.append(f"| `{name}` | {default} | {kind} | {FIELD_DOCS[name]} |")
    return "\n".join(rows)


def config_aliases() -> str:
    """The other names an option is accepted under (aiokafka's and librdkafka's)."""
    aliases: dict[str, str] = config_module._ALIASES
    rows = ["| also accepted as | option |", "| --- | --- |"]
    for alias, name in sorted(aliases.items()):
        dotted = alias.replace("_", ".")
        shown = f"`{alias}`" if alias == "max_batch_size" else f"`{dotted}`"
        rows.append(f"| {shown} | `{name}` |")
    return "\n".join(rows)


def metrics() -> str:
    """Every name ``producer.metrics()`` returns, with what it measures."""
    rows = ["| metric | meaning |", "| --- | --- |"]
    rows += [f"| `{name}` | {doc} |" for name, doc in sorted(METRIC_DOCS.items())]
    return "\n".join(rows)


TABLES: dict[str, Callable[[], str]] = {
    "config-options": config_options,
    "config-aliases": config_aliases,
    "metrics": metrics,
}


def render(markdown: str, where: str = "a page") -> str:
    """``markdown`` with each reference marker replaced by its table."""

    def table(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in TABLES:
            raise ValueError(f"{where}: unknown reference table {name!r}; known: {sorted(TABLES)}")
        return TABLES[name]()

    return MARKER.sub(table, markdown)


def on_page_markdown(markdown: str, *, page: Any, **kwargs: Any) -> str:
    return render(markdown, page.file.src_uri)
