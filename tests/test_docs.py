"""Every code block of README.md and docs/ is type-checked, run or parsed.

The convention (written out for contributors in docs/testing.md):

* A fenced block is ``python``, ``bash``, ``text`` or ``mermaid``, with its fence at the
  start of a line; anything else fails here.
* Every ``python`` block is a complete module, type-checked with ``mypy --strict``.
  A block preceded by ``<!-- docs-test: run -->`` is also run as a script (with this
  checkout first on ``PYTHONPATH``); it names its broker ``localhost:9092``, which is
  replaced by the address of this session's broker, and must exit with status 0.
  ``<!-- docs-test: run-spark -->`` marks a Spark example: run the same way under
  ``-m spark`` (it needs Java), as in a plain virtualenv: no ``PYSPARK_PYTHON``, and a
  ``python3`` first on ``PATH`` that is not this interpreter.
* Every command of a ``bash`` block is checked: ``aiokafka-lite`` lines parse with the
  CLI's own parser, scripts exist and take the options named, ``pip install`` names real
  extras and packages, ``python -m pytest`` names declared markers, ``python -c`` runs.
  A command with no rule here fails, so a new kind of command needs a rule.
* ``text`` blocks are output; the one preceded by ``<!-- docs-test: error-tree -->`` is
  the exception hierarchy and is checked against the classes. ``mermaid`` diagrams name
  modules that must exist.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import itertools
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from checkout import REPO_ROOT, run_python
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from aiokafka_lite.cli import build_parser

DOCS = REPO_ROOT / "docs"
PAGES = [REPO_ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
DOC_BROKER = "localhost:9092"  # what runnable blocks connect to; replaced by the test broker

FENCE = re.compile(r"^(\s*)```(.*)$")
MARKER = re.compile(r"^<!-- docs-test: ([a-z-]+) -->$")
KINDS = {
    "python": {None, "run", "run-spark"},
    "bash": {None},
    "text": {None, "error-tree"},
    "mermaid": {None},
}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    marker: str | None
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO_ROOT)}:{self.line}"


def read_blocks(page: Path) -> list[Block]:
    lines = page.read_text().splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        indent, lang = fence.groups()
        marker = MARKER.match(lines[i - 1]) if i > 0 else None
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        code = "\n".join(lines[i + 1 : end]) + "\n"
        lang = lang.strip() if not indent else f"indented {lang.strip()}"
        blocks.append(Block(page, i + 1, lang, marker and marker.group(1), code))
        i = end + 1
    return blocks


BLOCKS = [block for page in PAGES for block in read_blocks(page)]


def of_kind(lang: str, marker: str | None = None) -> list[Block]:
    return [b for b in BLOCKS if b.lang == lang and (marker is None or b.marker == marker)]


def ids(blocks: list[Block]) -> list[str]:
    return [b.where for b in blocks]


def test_every_block_is_of_a_known_kind() -> None:
    assert len(PAGES) > 15 and len(of_kind("python")) > 20  # the pages were found
    unknown = [
        f"{b.where}: ```{b.lang} with marker {b.marker!r}"
        for b in BLOCKS
        if b.lang not in KINDS or b.marker not in KINDS[b.lang]
    ]
    assert not unknown, "blocks this test does not know how to check:\n" + "\n".join(unknown)


# -- python: type-checked, and run where marked ----------------------------------------------

MYPY_CONFIG = """
[mypy]
strict = True
# These ship no type information: aiokafka (beside aiokafka_lite in the FastStream pages),
# pyarrow (under aiokafka_lite.spark; pyproject.toml ignores it likewise).
[mypy-aiokafka,aiokafka.*,pyarrow,pyarrow.*]
ignore_missing_imports = True
"""


# One mypy --strict run over every block: about 80 s on a quiet 2-core machine, and it
# shares the CPUs with the suite's other workers.
@pytest.mark.timeout(600)
def test_python_blocks_type_check(tmp_path: Path) -> None:
    blocks = of_kind("python")
    files = {}
    for n, block in enumerate(blocks):
        path = tmp_path / f"block_{n:03d}.py"
        path.write_text(block.code)
        files[path.name] = block
    (tmp_path / "mypy.ini").write_text(MYPY_CONFIG)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            "mypy.ini",
            "--cache-dir",
            str(tmp_path / "cache"),
            *sorted(files),
        ],
        cwd=tmp_path,
        env={"MYPYPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    # Point each error at its line in the page: "block_007.py:12: error: ..."
    problems = []
    for line in proc.stdout.splitlines():
        match = re.match(r"(block_\d+\.py):(\d+): (.*)", line)
        if match:
            block = files[match.group(1)]
            page_line = block.line + int(match.group(2))
            problems.append(f"{block.page.relative_to(REPO_ROOT)}:{page_line}: {match.group(3)}")
    assert proc.returncode == 0 and not problems, "\n".join(problems) or proc.stdout + proc.stderr


def ensure_read_topics(bootstrap: str, code: str) -> None:
    """Create the topics a block names in ``TopicPartition("name", n)``: the topics its
    application read from (offsets it commits), which exist on a real cluster. Apache
    Kafka refuses offsets for a topic it does not have (UNKNOWN_TOPIC_OR_PARTITION)."""
    wanted: dict[str, int] = {}
    for name, partition in re.findall(r'TopicPartition\("([A-Za-z0-9._-]+)", (\d+)\)', code):
        wanted[name] = max(wanted.get(name, 1), int(partition) + 1)
    if not wanted:
        return
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    existing = admin.list_topics(timeout=10).topics
    missing = [NewTopic(t, num_partitions=n) for t, n in wanted.items() if t not in existing]
    for fut in admin.create_topics(missing).values() if missing else []:
        with contextlib.suppress(KafkaException):  # created meanwhile: fine
            fut.result(timeout=15)


@pytest.mark.parametrize("block", of_kind("python", "run"), ids=ids(of_kind("python", "run")))
def test_runnable_python_block(block: Block, bootstrap: str, tmp_path: Path) -> None:
    # A block reaches only brokers the test controls: this session's, or one it starts.
    assert (
        DOC_BROKER in block.code
        or "EmbeddedBroker" in block.code
        or ("bootstrap" not in block.code)
    ), f"{block.where}: a runnable block connects to {DOC_BROKER} or starts EmbeddedBroker"
    ensure_read_topics(bootstrap, block.code)
    script = tmp_path / "block.py"
    script.write_text(block.code.replace(DOC_BROKER, bootstrap))
    proc = run_python(str(script), cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, f"{block.where} failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    # An example that leaves a failed future unread teaches users to lose errors.
    assert "never retrieved" not in proc.stderr, f"{block.where}:\n{proc.stderr[-3000:]}"


@pytest.mark.spark
@pytest.mark.timeout(900)  # a JVM, a batch job and a streaming query, on a busy machine
@pytest.mark.parametrize(
    "block", of_kind("python", "run-spark"), ids=ids(of_kind("python", "run-spark"))
)
def test_runnable_spark_block(block: Block, bootstrap: str, tmp_path: Path) -> None:
    # A Spark example must run as written where `python3` on PATH is another Python (an
    # unactivated virtualenv, a system Python): Spark starts its workers with `python3`
    # unless told otherwise, so the example must say which (local_session does). This
    # stand-in python3 fails every worker that runs it.
    from aiokafka_lite.spark.cluster import java_runtime

    if java_runtime() is None:
        pytest.skip("no Java runtime (no java on PATH, JAVA_HOME unset): Spark needs one")
    assert DOC_BROKER in block.code, f"{block.where}: a Spark example connects to {DOC_BROKER}"
    other = tmp_path / "other-python"
    other.mkdir()
    (other / "python3").write_text(
        "#!/bin/sh\necho 'not the interpreter with aiokafka_lite' >&2\nexit 3\n"
    )
    (other / "python3").chmod(0o755)
    script = tmp_path / "block.py"
    script.write_text(block.code.replace(DOC_BROKER, bootstrap))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env.update(PYTHONPATH=str(REPO_ROOT), PATH=f"{other}{os.pathsep}{env.get('PATH', '')}")
    proc = run_python(str(script), cwd=tmp_path, env=env, timeout=900)
    assert proc.returncode == 0, f"{block.where} failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    assert "not the interpreter with aiokafka_lite" not in proc.stderr


# -- bash: every command has a rule -----------------------------------------------------------


def _pipeline(line: str) -> list[list[str]]:
    words = shlex.split(line, comments=True)
    parts: list[list[str]] = [[]]
    for word in words:
        if word == "|":
            parts.append([])
        else:
            parts[-1].append(word)
    return [p for p in parts if p]


def check_cli(args: list[str]) -> None:
    """The command line's own parser accepts the arguments (``--help`` may exit 0)."""
    err = io.StringIO()
    exit_code: int | str | None = None
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            build_parser().parse_args(args)
        except SystemExit as e:
            exit_code = e.code
    if exit_code is not None:
        asked_for_help = bool({"--help", "-h", "--version"} & set(args))
        assert exit_code == 0 and asked_for_help, (
            f"aiokafka-lite {shlex.join(args)}: {err.getvalue()}"
        )


@functools.cache
def help_text(*command: str) -> str:
    """``python *command --help`` (``command``: the interpreter's arguments)."""
    proc = run_python(*command, "--help", cwd=REPO_ROOT)
    assert proc.returncode == 0, f"python {shlex.join(command)} --help: {proc.stderr[-2000:]}"
    return proc.stdout


def check_options(command: tuple[str, ...], args: list[str]) -> None:
    """Each ``--option`` (or ``-x``) in ``args`` is one that ``python *command --help``
    lists."""
    helped = help_text(*command)
    for arg in args:
        if arg.startswith("-") and arg != "-":
            option = arg.split("=", 1)[0]
            assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", helped), (
                f"python {shlex.join(command)} has no option {option}"
            )


def check_script(path: str, args: list[str]) -> None:
    script = REPO_ROOT / path
    assert script.is_file(), f"no such script: {path}"
    if any(a.startswith("-") for a in args):
        # Only a script with a parser is asked for --help (another would just run).
        assert "argparse" in script.read_text(), f"{path} takes no options"
        check_options((path,), args)


def check_pip_install(args: list[str]) -> None:
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    name = PYPROJECT["project"]["name"]
    for arg in args:
        if arg in ("-e", "--editable", "-U", "--upgrade"):
            continue
        match = re.fullmatch(r"([\w.-]+)(?:\[([\w,-]+)\])?", arg)
        assert match, f"pip install: cannot read {arg!r}"
        package, wanted = match.group(1), (match.group(2) or "").split(",")
        if package in (".", name):
            assert set(wanted) - {""} <= extras, f"{arg}: no such extra (have {sorted(extras)})"
        else:
            metadata.distribution(package)  # a real package, installed beside this one


def check_pytest(args: list[str]) -> None:
    declared = {m.split(":", 1)[0] for m in PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]}
    for flag, value in itertools.pairwise(args):
        if flag == "-m":
            named = set(re.findall(r"\w+", value)) - {"and", "or", "not"}
            assert named <= declared, f"-m {value!r}: undeclared markers {named - declared}"
    paths = [a for a in args if not a.startswith("-") and "/" in a]
    assert all((REPO_ROOT / p.split("::")[0]).exists() for p in paths), paths


def check_uvicorn(args: list[str]) -> None:
    target = next(a for a in args if ":" in a and not a.startswith("-"))
    module, attr = target.split(":")
    source = (REPO_ROOT / (module.replace(".", "/") + ".py")).read_text()
    assert re.search(rf"^{attr} = ", source, re.M), f"{target}: no top-level {attr!r}"


def check_python_c(code: str) -> None:
    proc = run_python("-c", code)
    assert proc.returncode == 0, f"python -c {code!r}: {proc.stderr[-2000:]}"


SHELL_TOOLS = {"seq"}  # standard tools feeding a documented command


def check_command(argv: list[str]) -> None:
    while re.fullmatch(r"[A-Z_]+=\S*", argv[0]):  # VAR=value prefixes
        argv = argv[1:]
    cmd, args = argv[0], argv[1:]
    if cmd == "aiokafka-lite":
        check_cli(args)
    elif cmd == "python" and args[:2] == ["-m", "aiokafka_lite"]:
        check_cli(args[2:])
    elif cmd == "python" and args[:2] == ["-m", "pytest"]:
        check_pytest(args[2:])
    elif cmd == "python" and args[:2] == ["-m", "benchmarks.bench"]:
        check_options(("-m", "benchmarks.bench"), args[2:])
    elif cmd == "python" and args[:1] == ["-c"]:
        check_python_c(args[1])
    elif cmd == "python" and args and args[0].endswith(".py"):
        check_script(args[0], args[1:])
    elif cmd == "spark-submit":
        script = next(i for i, a in enumerate(args) if a.endswith(".py"))
        check_script(args[script], args[script + 1 :])
    elif cmd == "pip" and args[:1] == ["install"]:
        check_pip_install(args[1:])
    elif cmd == "mkdocs":
        check_options(("-m", "mkdocs", args[0]), args[1:])
    elif cmd == "uvicorn":
        check_uvicorn(args)
    else:
        assert cmd in SHELL_TOOLS, f"no rule for the command {cmd!r}: add one to tests/test_docs.py"


@pytest.mark.parametrize("block", of_kind("bash"), ids=ids(of_kind("bash")))
def test_bash_block_commands(block: Block) -> None:
    argvs = [
        part for line in block.code.replace("\\\n", " ").splitlines() for part in _pipeline(line)
    ]
    assert argvs, f"{block.where}: an empty bash block"
    for argv in argvs:
        try:
            check_command(argv)
        except AssertionError as e:
            raise AssertionError(f"{block.where}: {shlex.join(argv)}: {e}") from None


# -- text and mermaid --------------------------------------------------------------------------


def test_error_tree_matches_the_classes() -> None:
    """The hierarchy drawn in docs/errors.md: every class exists under its parent, and
    those the drawing calls retriable are (and the others are not)."""
    (block,) = of_kind("text", "error-tree")
    errors = importlib.import_module("aiokafka_lite.errors")
    parents: list[type] = []
    checked = 0
    for line in block.code.splitlines():
        match = re.match(r"^([│├└─ ]*)([\w.]+)(\s+(retriable:)?)?", line)
        assert match, line
        depth = len(match.group(1)) // 4
        name = match.group(2)
        if name == "...":
            continue
        module = (
            importlib.import_module(f"aiokafka_lite.{name.rsplit('.', 1)[0]}")
            if "." in name
            else errors
        )
        cls = getattr(module, name.rsplit(".", 1)[-1])
        parents[depth:] = [cls]
        if depth:
            assert issubclass(cls, parents[depth - 1]), f"{name} is not a {parents[depth - 1]}"
        under_broker = depth and issubclass(cls, errors.BrokerResponseError)
        if not under_broker:
            assert bool(cls.retriable) == bool(match.group(4)), f"{name}.retriable"
        checked += 1
    assert checked > 20


def test_mermaid_diagrams_name_modules_that_exist() -> None:
    package = REPO_ROOT / "aiokafka_lite"
    modules = {p.relative_to(package).as_posix() for p in package.rglob("*.py")}
    for block in of_kind("mermaid"):
        names = re.findall(r"[\w/]+\.py|\b\w+/(?=[ <\"])", block.code)
        assert names, block.where
        for name in names:
            found = any(
                f"/{m}".endswith(f"/{name}")
                or f"/{m}".startswith(f"/{name}")
                or f"/{name}" in f"/{m}"
                for m in modules
            )
            assert found, f"{block.where}: no module {name} in aiokafka_lite/"


# -- links and references ----------------------------------------------------------------------

LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE_FILE = re.compile(r"`((?:[\w.-]+/)*[\w-]+\.py)`")


def slug(heading: str) -> str:
    """The anchor MkDocs (python-markdown's toc) gives a heading."""
    text = re.sub(r"[`*]", "", heading)
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO_ROOT)) for p in PAGES])
def test_links_and_file_names_resolve(page: Path) -> None:
    text = page.read_text()
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # another site
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.is_file(), f"{page.name}: link to missing {target}"
        if anchor:
            assert anchor in anchors(dest), f"{page.name}: no heading #{anchor} in {path}"
    # Files named in the text: `aiokafka_lite/_internal/sasl.py`, `tests/readers.py`, ...
    project = [REPO_ROOT / d for d in ("aiokafka_lite", "tests", "examples", "benchmarks", "docs")]
    for name in set(CODE_FILE.findall(text)):
        found = (REPO_ROOT / name).is_file() or any(
            p.as_posix().endswith("/" + name) for d in project for p in d.rglob("*.py")
        )
        assert found, f"{page.name} names {name}, which does not exist"


def test_readme_is_a_short_read() -> None:
    """The README stays a five-minute read; the rest belongs to the docs site."""
    readme = (REPO_ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for marker in ("<!-- bench-table:start -->", "<!-- bench-table:end -->"):
        assert readme.count(marker) == 1, marker
    bench = (DOCS / "benchmarks.md").read_text()
    for marker in ("<!-- bench-detail:start -->", "<!-- bench-detail:end -->"):
        assert bench.count(marker) == 1, marker
