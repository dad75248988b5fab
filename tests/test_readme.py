"""The README's configuration table lists every option with its real default.

Regenerate it after changing ProducerConfig: ``python tests/test_readme.py --write``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from aiokafka_lite.config import FIELD_DOCS, ProducerConfig

README = Path(__file__).parent.parent / "README.md"
START, END = "<!-- config-table:start -->", "<!-- config-table:end -->"


def config_table() -> str:
    defaults = ProducerConfig()
    rows = ["| option | default | meaning |", "| --- | --- | --- |"]
    for name in ProducerConfig.__struct_fields__:
        rows.append(f"| `{name}` | `{getattr(defaults, name)!r}` | {FIELD_DOCS[name]} |")
    return "\n".join(rows)


def current_table() -> str:
    text = README.read_text()
    match = re.search(re.escape(START) + r"\n(.*?)\n" + re.escape(END), text, re.S)
    assert match, "README.md lacks the config-table markers"
    return match.group(1)


def test_readme_config_table_is_in_sync() -> None:
    assert current_table() == config_table(), "run: python tests/test_readme.py --write"


def test_every_option_is_documented() -> None:
    assert set(FIELD_DOCS) == set(ProducerConfig.__struct_fields__)


if __name__ == "__main__" and "--write" in sys.argv:
    block = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    README.write_text(block.sub(START + "\n" + config_table() + "\n" + END, README.read_text()))
