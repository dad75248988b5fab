"""The reference pages generated from the code: the configuration and metrics tables.

``docs/hooks/reference.py`` (a MkDocs hook) replaces the ``<!-- reference: ... -->``
markers of the docs with tables built from ``ProducerConfig``/``FIELD_DOCS`` and
``METRIC_DOCS`` at every build. These tests check what it writes against the code, and
that the site builds with ``mkdocs build --strict`` (which fails on any warning).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from aiokafka_lite.config import FIELD_DOCS, ProducerConfig
from aiokafka_lite.errors import ConfigError
from aiokafka_lite.metrics import METRIC_DOCS

REPO_ROOT = Path(__file__).resolve().parent.parent
DOCS = REPO_ROOT / "docs"


def load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reference_hook", DOCS / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = load_hook()


def rows(markdown: str) -> list[list[str]]:
    """The cells of every table row (header and rule rows left out)."""
    cells = [
        [c.strip() for c in line.strip().strip("|").split(" | ")]
        for line in markdown.splitlines()
        if line.startswith("| ") and not line.startswith("| ---")
    ]
    return [c for c in cells if c[0] not in ("option", "metric", "also accepted as")]


def test_every_option_has_its_line_of_documentation() -> None:
    assert set(FIELD_DOCS) == set(ProducerConfig.__struct_fields__)


def test_configuration_page_lists_every_option_with_its_real_default() -> None:
    page = HOOK.render((DOCS / "configuration.md").read_text())
    assert "<!-- reference:" not in page
    options = {r[0].strip("`"): r for r in rows(page) if len(r) == 4}
    assert list(options) == list(ProducerConfig.__struct_fields__)  # all, in the code's order
    defaults = ProducerConfig()
    for name, (_, default, kind, meaning) in options.items():
        assert default == f"`{getattr(defaults, name)!r}`", name
        assert meaning == FIELD_DOCS[name]
        assert kind, name
    # Ranges come from the declared bounds, e.g. batch_size's 1..2**30.
    assert options["batch_size"][2] == "int 1..1,073,741,824"
    assert options["linger_ms"][2] == "number ≥ 0"


def test_every_other_name_shown_is_accepted_for_its_option() -> None:
    page = HOOK.render((DOCS / "configuration.md").read_text())
    aliases = [r for r in rows(page) if len(r) == 2]
    assert len(aliases) >= 10
    for alias, option in aliases:
        alias, option = alias.strip("`"), option.strip("`")
        assert option in ProducerConfig.__struct_fields__
        problem = ""
        try:
            ProducerConfig.from_kwargs(**{alias: None})
        except ConfigError as e:  # a bad value is fine here; the name must be known
            problem = str(e)
        assert "unknown producer option" not in problem, alias


def test_metrics_page_lists_every_metric() -> None:
    page = HOOK.render((DOCS / "metrics.md").read_text())
    listed = {r[0].strip("`"): r[1] for r in rows(page) if len(r) == 2}
    assert listed == METRIC_DOCS


def test_an_unknown_reference_table_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown reference table 'config-optionz'"):
        HOOK.render("text\n<!-- reference: config-optionz -->\n", "page.md")


def build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_site_builds_strictly_with_the_generated_tables(tmp_path: Path) -> None:
    proc = build(REPO_ROOT, tmp_path / "site")
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = (tmp_path / "site" / "configuration" / "index.html").read_text()
    for name in ProducerConfig.__struct_fields__:
        assert re.search(rf"<td><code>{name}</code></td>", html), name
    metrics = (tmp_path / "site" / "metrics" / "index.html").read_text()
    assert all(f"<td><code>{name}</code></td>" in metrics for name in METRIC_DOCS)
    assert not list((tmp_path / "site").rglob("hooks"))  # the hook is not published


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    """The settings are strict: a link to a page that does not exist stops the build."""
    shutil.copytree(DOCS, tmp_path / "docs")
    shutil.copy(REPO_ROOT / "mkdocs.yml", tmp_path)
    with (tmp_path / "docs" / "index.md").open("a") as f:
        f.write("\nSee [the missing page](missing.md).\n")
    proc = build(tmp_path, tmp_path / "site")
    assert proc.returncode != 0
    assert "missing.md" in proc.stderr


def test_the_protocol_versions_stated_are_the_ones_declared() -> None:
    """The "ours" column of the status tables (docs/index.md, README.md) is what the
    request declarations allow, so a new version is not left out of what users read."""
    from aiokafka_lite._internal import protocol as messages

    for page in (DOCS / "index.md", REPO_ROOT / "README.md"):
        table = [
            r
            for r in rows(page.read_text())
            if len(r) == 5
            and r[0] != "API"
            and all(hasattr(messages, f"{a.strip()}Request") for a in r[0].split(","))
        ]
        assert len(table) >= 6, page
        for api_cell, ours, *_ in table:
            apis = [a.strip() for a in api_cell.split(",")]
            ranges = [v.strip() for v in ours.split(",")]
            assert len(apis) == len(ranges), api_cell
            for api, stated in zip(apis, ranges, strict=True):
                request = getattr(messages, f"{api}Request")
                low, high = request.MIN_VERSION, request.MAX_VERSION
                declared = f"v{low}" if low == high else f"v{low}-v{high}"
                assert stated == declared, f"{page.name}: {api} is {declared}, not {stated}"
