"""The command line, run as a user runs it: ``python -m aiokafka_lite`` in a subprocess.

What was produced is read back with confluent-kafka (tests/readers.py), never our decoder.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.server
import importlib
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import threading
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from aiohttp import web
from confluent_kafka import Producer as CkProducer
from confluent_kafka.admin import AdminClient
from conftest import TopicFactory
from readers import read_all_confluent

import aiokafka_lite
from aiokafka_lite.cli import build_parser
from aiokafka_lite.cli._common import (
    EXIT_CODES,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
)
from aiokafka_lite.cli.produce import MalformedLineError, parse_json_line

REPO_ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


def cli(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None, timeout: float = 60
):
    return subprocess.run(
        [sys.executable, "-m", "aiokafka_lite", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env or ENV,
        timeout=timeout,
        cwd=REPO_ROOT,
    )


def topic_names(bootstrap: str) -> set[str]:
    # list_topics() without a name asks for all topics: it never auto-creates one.
    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics)


# -- produce ---------------------------------------------------------------------------


def test_produce_lines_with_keys_and_headers_from_stdin(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    lines = "".join(f"user-{i}:payload {i}\n" for i in range(500))
    proc = cli(
        "produce", topic, "-b", bootstrap, "--key-separator", ":",
        "-H", "source=cli", "-H", "run=1", "--no-progress", stdin=lines,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "500 record(s) sent" in proc.stderr
    records = read_all_confluent(bootstrap, topic, 500)
    assert [(r.key, r.value) for r in records] == [
        (f"user-{i}".encode(), f"payload {i}".encode()) for i in range(500)
    ]
    assert all(r.headers == [("source", b"cli"), ("run", b"1")] for r in records)


def test_produce_json_file_reports_malformed_lines_and_sends_the_rest(
    bootstrap: str, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topic = topic_factory(2)
    lines = [
        json.dumps({"key": "a", "value": "first", "headers": {"h": "1"}}),
        json.dumps({"value": {"nested": [1, 2]}, "partition": 1}),
        '{"value": "broken',  # line 3: not JSON
        json.dumps({"value": "x", "vlaue": "typo"}),  # line 4: unknown field
        "",  # blank: skipped
        json.dumps({"key": None, "value": None, "headers": [["k", None]], "timestamp": 1234}),
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    proc = cli("produce", topic, "-b", bootstrap, "--format", "json", "-f", str(path))
    assert proc.returncode == 1, proc.stderr
    assert "3 record(s) sent" in proc.stderr and "2 failed" in proc.stderr
    assert "line 3: malformed: invalid JSON" in proc.stderr
    assert "line 4: malformed: unknown field(s) ['vlaue']" in proc.stderr
    records = read_all_confluent(bootstrap, topic, 3)
    by_value = {r.value: r for r in records}
    assert set(by_value) == {b"first", b'{"nested":[1,2]}', None}
    assert by_value[b"first"].key == b"a" and by_value[b"first"].headers == [("h", b"1")]
    assert by_value[b'{"nested":[1,2]}'].partition == 1
    tombstone = by_value[None]
    assert tombstone.key is None and tombstone.timestamp == 1234
    assert tombstone.headers == [("k", None)]


def test_produce_line_without_key_separator_is_reported(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    proc = cli(
        "produce", topic, "-b", bootstrap, "--key-separator", "\t", "--no-progress",
        stdin="k1\tv1\nno separator here\nk3\tv3\n",
    )  # fmt: skip
    assert proc.returncode == 1
    assert "line 2: malformed: no key separator" in proc.stderr
    assert [(r.key, r.value) for r in read_all_confluent(bootstrap, topic, 2)] == [
        (b"k1", b"v1"),
        (b"k3", b"v3"),
    ]


def test_produce_unreadable_file_is_a_clear_error(bootstrap: str, tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    proc = cli("produce", "whatever", "-b", bootstrap, "-f", str(missing))
    assert proc.returncode == 2
    assert f"cannot read {str(missing)!r}: No such file or directory" in proc.stderr
    directory = cli("produce", "whatever", "-b", bootstrap, "-f", str(tmp_path))
    assert directory.returncode == 2 and "cannot read" in directory.stderr


def test_produce_to_unknown_topic_with_auto_create_off_fails_fast(bootstrap: str) -> None:
    topic = f"missing-{uuid.uuid4().hex}"
    proc = cli(
        "produce", topic, "-b", bootstrap, "--no-auto-create", "--max-block-ms", "3000",
        stdin="a\nb\n", timeout=30,
    )  # fmt: skip
    assert proc.returncode == 2
    assert f"topic {topic!r} does not exist" in proc.stderr
    assert "auto-creation is off" in proc.stderr
    assert topic not in topic_names(bootstrap)


def test_unknown_topic_wait_is_bounded_by_max_block_ms(bootstrap: str) -> None:
    # Without the up-front check, the producer itself waits for the topic's metadata;
    # with auto-creation off it never comes, and --max-block-ms ends the wait.
    topic = f"missing-{uuid.uuid4().hex}"
    proc = cli(
        "produce", topic, "-b", bootstrap, "-X", "allow_auto_create_topics=false",
        "--max-block-ms", "1000", stdin="a\n", timeout=30,
    )  # fmt: skip
    assert proc.returncode == 2
    assert f"topic {topic!r} is not available" in proc.stderr
    assert "after 1000 ms (max_block_ms)" in proc.stderr
    assert "UNKNOWN_TOPIC_OR_PARTITION" in proc.stderr
    assert topic not in topic_names(bootstrap)


def test_produce_record_refused_by_the_producer_makes_the_exit_code_non_zero(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    # Valid JSON, but partition 5 of a 1-partition topic: send() refuses it.
    topic = topic_factory(1)
    proc = cli(
        "produce", topic, "-b", bootstrap, "--format", "json", "--no-progress",
        stdin=json.dumps({"value": "ok", "partition": 5}) + "\n",
    )  # fmt: skip
    assert proc.returncode == 1
    assert "line 1: not sent: partition 5 is out of range" in proc.stderr


def test_produce_to_a_topic_name_kafka_refuses_is_one_line(bootstrap: str) -> None:
    proc = cli("produce", "bad topic!", "-b", bootstrap, stdin="hi\n")
    assert proc.returncode == EXIT_USAGE
    assert "Traceback" not in proc.stderr
    assert "error: topic 'bad topic!' is not a valid Kafka topic name" in proc.stderr


def test_json_line_parsing() -> None:
    record = parse_json_line(b'{"key": 7, "value": "v", "headers": {"a": "b"}}')
    assert record is not None
    assert (record.key, record.value, record.headers) == (b"7", b"v", [("a", b"b")])
    assert parse_json_line(b"   ") is None
    for bad, why in (
        (b"[1, 2]", "expected a JSON object"),
        (b'{"partition": -1}', "partition must be a non-negative integer"),
        (b'{"headers": "x"}', "headers must be"),
        (b'{"headers": {"a": 1}}', "key and value must be strings"),
    ):
        with pytest.raises(MalformedLineError, match=why):
            parse_json_line(bad)


# -- perf ------------------------------------------------------------------------------


def test_perf_against_a_cluster_reports_every_record(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(3)
    proc = cli(
        "perf", "-b", bootstrap, "--topic", topic, "--num-records", "3000",
        "--record-size", "64", "--acks", "1", "--linger-ms", "2", "--batch-size", "8192",
        "--compression-type", "lz4", "-X", "enable.idempotence=false", "--json",
        "--no-progress", "--print-metrics",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["records"] == 3000 and result["failed"] == 0
    lat = [result[f"latency_{k}_ms"] for k in ("p50", "p95", "p99", "max")]
    assert lat == sorted(lat) and lat[0] > 0
    assert result["records_per_sec"] > 0 and result["mb_per_sec"] > 0
    metrics = result["metrics"]
    assert metrics["record-send-total"] == 3000 and metrics["record-error-total"] == 0
    assert 0 < metrics["compression-rate-avg"] < 1  # lz4 on 26 letters
    records = read_all_confluent(bootstrap, topic, 3000)
    assert len(records) == 3000
    assert {len(r.value or b"") for r in records} == {64}
    assert all((r.value or b"").isupper() for r in records)


def test_perf_throughput_cap_and_table(bootstrap: str, topic_factory: TopicFactory) -> None:
    topic = topic_factory(1)
    proc = cli(
        "perf", "-b", bootstrap, "--topic", topic, "--num-records", "200",
        "--record-size", "10", "--throughput", "400",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "rec/s" in proc.stdout and "p99 ms" in proc.stdout
    # 200 records at 400/s take about half a second: the cap held them back.
    assert len(read_all_confluent(bootstrap, topic, 200)) == 200


def test_perf_starts_its_own_broker_without_bootstrap() -> None:
    proc = cli("perf", "--num-records", "2000", "--record-size", "100", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "started an embedded broker at 127.0.0.1:" in proc.stderr
    assert json.loads(proc.stdout)["records"] == 2000


def test_perf_bad_producer_property_names_it(bootstrap: str) -> None:
    proc = cli("perf", "-b", bootstrap, "--num-records", "1", "--record-size", "1",
               "-X", "linger.msec=5")  # fmt: skip
    assert proc.returncode == 2
    assert "unknown producer option 'linger.msec'" in proc.stderr
    assert "linger_ms" in proc.stderr  # the suggestion


def test_missing_rich_says_which_extra_to_install(bootstrap: str, tmp_path: Path) -> None:
    # A stand-in 'rich' package that fails to import, placed first on the path: the
    # real one is installed here, so this is the only way to see the message.
    (tmp_path / "rich").mkdir()
    (tmp_path / "rich" / "__init__.py").write_text("raise ImportError('no rich here')\n")
    env = {**ENV, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO_ROOT}"}
    proc = cli("perf", "-b", bootstrap, "--num-records", "1", "--record-size", "1", env=env)
    assert proc.returncode == 2
    assert 'pip install "aiokafka-lite[cli]"' in proc.stderr
    assert 'in a clone of the repository, pip install -e ".[cli]"' in proc.stderr


# -- the live progress bar ------------------------------------------------------------
#
# rich draws a live bar only on a terminal. These variables make it treat the pipe as
# an interactive one (TTY_COMPATIBLE / TTY_INTERACTIVE: rich >= 14; FORCE_COLOR for
# older rich), so the bar is redrawn in place, frame after frame, as a user sees it.

LIVE_ENV = {
    **ENV,
    "TTY_COMPATIBLE": "1",
    "TTY_INTERACTIVE": "1",
    "FORCE_COLOR": "1",
    "COLUMNS": "160",
    "TERM": "xterm-256color",
}
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_ERASE_LINE = "\x1b[2K"  # a live redraw erases the previous frame


def bar_frames(stderr: str, label: str) -> list[tuple[int, int | None, int]]:
    """(records done, total or None, rate in records/s) of every frame drawn."""
    text = _ANSI.sub("", stderr)
    frames = re.findall(rf"{re.escape(label)}[^\d\n]*([\d,]+)(?:/([\d,]+))? ([\d,]+) rec/s", text)
    return [
        (int(done.replace(",", "")), int(total.replace(",", "")) if total else None,
         int(rate.replace(",", "")))
        for done, total, rate in frames
    ]  # fmt: skip


def check_live_bar(frames: list[tuple[int, int | None, int]], total: int | None, n: int) -> None:
    assert len(frames) >= 2, frames  # the first refresh and the final one at least
    assert all(t == total for _, t, _ in frames)
    done = [d for d, _, _ in frames]
    assert done == sorted(done)  # the count only goes up
    assert done[0] < n  # drawn while sending, not only at the end
    assert done[-1] == n
    assert frames[-1][2] > 0  # a rate of the records delivered


def test_perf_shows_a_live_progress_bar_with_its_rate(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(2)
    proc = cli(
        "perf", "-b", bootstrap, "--topic", topic, "--num-records", "2000",
        "--record-size", "20", "--throughput", "4000", env=LIVE_ENV,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert _ERASE_LINE in proc.stderr
    check_live_bar(bar_frames(proc.stderr, f"perf {topic}"), 2000, 2000)
    # The bar is on stderr only; the results table is on stdout.
    out = _ANSI.sub("", proc.stdout)
    assert f"perf {topic}" not in out and _ERASE_LINE not in proc.stdout
    assert "producer performance" in out
    header = next(line for line in out.splitlines() if "records" in line)
    for column in ("records", "rec/s", "MB/s", "avg ms", "p50 ms", "p95 ms", "p99 ms", "max ms"):
        assert column in header
    row = next(line for line in out.splitlines() if line.startswith("│"))
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[0] == "2,000" and int(cells[1].replace(",", "")) > 0
    assert len(read_all_confluent(bootstrap, topic, 2000)) == 2000


def test_produce_shows_a_live_progress_bar_with_its_rate(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    topic = topic_factory(1)
    lines = "".join(f"line {i}\n" for i in range(3000))
    proc = cli("produce", topic, "-b", bootstrap, stdin=lines, env=LIVE_ENV)
    assert proc.returncode == 0, proc.stderr
    assert _ERASE_LINE in proc.stderr
    frames = bar_frames(proc.stderr, f"producing to {topic}")
    check_live_bar(frames, None, 3000)  # stdin has no known length: a count, no total
    # The summary follows the bar.
    text = _ANSI.sub("", proc.stderr)
    summary = f"3,000 record(s) sent to {topic}, 0 failed"
    assert summary in text
    assert text.rindex(summary) > text.rindex(f"producing to {topic}")
    assert proc.stdout == ""
    records = read_all_confluent(bootstrap, topic, 3000)
    assert [r.value for r in records] == [f"line {i}".encode() for i in range(3000)]


# -- a cluster that cannot be used -----------------------------------------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    "command",
    [
        ("produce", "events"),
        ("perf", "--num-records", "10", "--record-size", "10"),
        ("topics", "list"),
        ("topics", "describe", "events"),
    ],
    ids=" ".join,
)
def test_an_unreachable_cluster_is_one_line_and_exit_2(command: tuple[str, ...]) -> None:
    # The help promises exit 2 for "an unreachable cluster", with every command's wording.
    address = f"127.0.0.1:{closed_port()}"
    extra = ("--timeout-ms", "2000") if command[0] == "topics" else ("--no-progress",)
    proc = cli(*command, "-b", address, *extra, stdin="a\n", timeout=30)
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"error: cannot reach the cluster at {address}: " in proc.stderr
    assert "Connect call failed" in proc.stderr  # the library's reason follows
    assert proc.stdout == ""


def test_produce_without_a_cluster_refuses_and_says_how_to_get_one() -> None:
    # Records sent to a broker started for this command alone would vanish when it exits.
    proc = cli("produce", "events", stdin="hi\n")
    assert proc.returncode == EXIT_USAGE
    assert "error: produce needs a cluster: pass -b HOST:PORT" in proc.stderr
    assert "run `aiokafka-lite broker` in another terminal" in proc.stderr
    assert "started an embedded broker" not in proc.stderr
    assert "record(s) sent" not in proc.stderr
    assert proc.stdout == ""
    shown = " ".join(cli("produce", "--help").stdout.split())
    assert "(required; `aiokafka-lite broker` runs a local one)" in shown


@contextlib.contextmanager
def http_server(kind: str) -> Iterator[int]:
    """A real HTTP server on a free port, in a thread: aiohttp's, which answers Kafka's
    bytes with 400 Bad Request, or the standard library's, which waits for a request
    line that never ends."""
    if kind == "http.server":
        server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler
        )
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield server.server_address[1]
        finally:
            server.shutdown()
            server.server_close()
        return
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(web.Application())
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield runner.addresses[0][1]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.run_until_complete(runner.cleanup())
        loop.close()


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        (
            "aiohttp",
            "does not speak Kafka: it answered Kafka's first request (ApiVersions) with "
            "b'HTTP/1.1 400 Bad Request",
        ),
        (
            "http.server",
            "timed out after 1.0s: the TCP connection was established, but no answer to "
            "Kafka's first request (ApiVersions) came. Is a Kafka listener there?",
        ),
    ],
)
def test_an_http_server_on_the_bootstrap_address_is_named(kind: str, says: str) -> None:
    with http_server(kind) as port:
        address = f"127.0.0.1:{port}"
        setup = ("-X", "socket_connection_setup_timeout_ms=1000", "--no-progress")
        for command in (
            ("produce", "events", *setup),
            ("perf", "--num-records", "1", "--record-size", "1", *setup),
            # topics gives its connection 4/5 of --timeout-ms, so that the connection's
            # own diagnosis, not the command's timeout, is what it reports
            ("topics", "list", "--timeout-ms", "1250"),
        ):
            proc = cli(*command, "-b", address, stdin="a\n", timeout=30)
            assert proc.returncode == EXIT_USAGE, proc.stderr
            assert "Traceback" not in proc.stderr
            assert f"error: cannot reach the cluster at {address}: " in proc.stderr
            assert re.sub(r"HTTP/1\.[01]", "HTTP/1.1", says) in re.sub(
                r"HTTP/1\.[01]", "HTTP/1.1", proc.stderr
            ), proc.stderr


def test_version_says_which_build_runs_and_the_python() -> None:
    for pure in (False, True):
        env = {k: v for k, v in ENV.items() if k != "AIOKAFKA_LITE_NO_EXTENSIONS"}
        if pure:
            env["AIOKAFKA_LITE_NO_EXTENSIONS"] = "1"
        compiled = subprocess.run(
            [sys.executable, "-c", "import aiokafka_lite.speedups as s; print(s.COMPILED)"],
            capture_output=True, text=True, env=env, check=True,
        ).stdout.strip() == "True"  # fmt: skip
        proc = cli("--version", env=env)
        assert proc.returncode == 0
        python = f"{platform.python_implementation()} {platform.python_version()}"
        build = "compiled build" if compiled else "pure-Python build: "
        assert proc.stdout.startswith(f"aiokafka-lite {aiokafka_lite.__version__} ({build}")
        assert proc.stdout.rstrip().endswith(f"; {python})")
        if pure:
            assert not compiled
            assert "(pure-Python build: AIOKAFKA_LITE_NO_EXTENSIONS is set;" in proc.stdout


# -- topics ----------------------------------------------------------------------------


def only_node_id(bootstrap: str) -> int:
    """The node id of a one-broker cluster (Tansu's is 111, Apache Kafka's here 1), as an
    independent client sees it."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    (node_id,) = admin.list_topics(timeout=10).brokers
    return int(node_id)


def test_topics_create_list_describe(bootstrap: str) -> None:
    topic = f"cli-{uuid.uuid4().hex}"
    created = cli("topics", "create", topic, "-b", bootstrap, "--partitions", "3")
    assert created.returncode == 0, created.stderr
    listed = cli("topics", "list", "-b", bootstrap)
    assert f"{topic}\t3" in listed.stdout.splitlines()
    described = cli("topics", "describe", topic, "-b", bootstrap)
    assert described.returncode == 0, described.stderr
    rows = [line for line in described.stdout.splitlines() if topic in line]
    assert len(rows) == 3
    port = bootstrap.rsplit(":", 1)[1]
    assert all(f"{only_node_id(bootstrap)} (127.0.0.1:{port})" in row for row in rows)
    # Creating it again does nothing: exit code 2, as for every "nothing done".
    again = cli("topics", "create", topic, "-b", bootstrap)
    assert again.returncode == 2 and "TOPIC_ALREADY_EXISTS" in again.stderr
    kept = cli("topics", "create", topic, "-b", bootstrap, "--if-not-exists")
    assert kept.returncode == 0, kept.stderr
    assert f"{topic} exists already: left as it is" in kept.stderr


def test_topics_describe_unknown_topic_does_not_create_it(bootstrap: str) -> None:
    topic = f"absent-{uuid.uuid4().hex}"
    proc = cli("topics", "describe", topic, "-b", bootstrap)
    assert proc.returncode == 2  # nothing to describe
    assert "UNKNOWN_TOPIC_OR_PARTITION" in proc.stdout
    assert topic not in topic_names(bootstrap)


def test_topics_create_some_existing_creates_the_rest_and_exits_1(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    existing = topic_factory(2)
    new = f"cli-{uuid.uuid4().hex}"
    proc = cli("topics", "create", existing, new, "-b", bootstrap, "--partitions", "3")
    assert proc.returncode == 1, proc.stderr  # partly done
    assert f"cannot create {existing}" in proc.stderr and "TOPIC_ALREADY_EXISTS" in proc.stderr
    assert f"created {new} (3 partition(s))" in proc.stderr
    listed = cli("topics", "list", "-b", bootstrap).stdout.splitlines()
    assert f"{new}\t3" in listed and f"{existing}\t2" in listed  # the existing one untouched


def test_topics_describe_some_unknown_exits_1(bootstrap: str, topic_factory: TopicFactory) -> None:
    known = topic_factory(1)
    unknown = f"absent-{uuid.uuid4().hex}"
    proc = cli("topics", "describe", known, unknown, "-b", bootstrap)
    assert proc.returncode == 1  # partly done: the known topic is described
    rows = proc.stdout.splitlines()
    assert any(known in row and f"{only_node_id(bootstrap)} (" in row for row in rows)
    assert any(unknown in row and "UNKNOWN_TOPIC_OR_PARTITION" in row for row in rows)
    assert unknown not in topic_names(bootstrap)


def test_topics_create_on_an_unreachable_cluster_does_nothing() -> None:
    name = f"cli-{uuid.uuid4().hex}"
    proc = cli("topics", "create", name, "-b", "127.0.0.1:1", "--timeout-ms", "2000")
    assert proc.returncode == 2
    assert f"cannot create {name}" in proc.stderr and "127.0.0.1:1" in proc.stderr


def test_topics_unreachable_cluster_is_a_clear_error() -> None:
    proc = cli("topics", "list", "-b", "127.0.0.1:1", "--timeout-ms", "2000")
    assert proc.returncode == 2
    assert "127.0.0.1:1" in proc.stderr


# -- broker ----------------------------------------------------------------------------


def test_broker_runs_in_the_foreground_until_ctrl_c() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiokafka_lite", "broker"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert proc.stdout is not None
        address = proc.stdout.readline().strip()
        assert address.startswith("127.0.0.1:")
        producer = CkProducer({"bootstrap.servers": address})
        producer.produce("dev", b"hello")
        assert producer.flush(10) == 0
        assert [r.value for r in read_all_confluent(address, "dev", 1)] == [b"hello"]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_broker_help_names_its_traps() -> None:
    shown = " ".join(cli("broker", "--help").stdout.split())
    assert "aiokafka's own idempotent or transactional producer" in shown
    assert 'fails at start() with "[Error -1] UnknownError"' in shown
    assert "end offsets under-report, whoever wrote the records" in shown


@pytest.mark.parametrize("page", ["quickstart.md", "testing-apps.md"])
def test_the_pages_that_start_an_embedded_broker_name_its_traps(page: str) -> None:
    """Where users meet the embedded broker: the quickstart, and the pytest plugin's
    ``kafka_broker`` fixture (a test of aiokafka's own clients on it hits both traps)."""
    docs = Path(__file__).resolve().parent.parent / "docs"
    shown = " ".join((docs / page).read_text().split())
    assert "idempotent or transactional producer fails" in shown
    assert "under-report" in shown


@pytest.mark.tansu_only("the traps are the embedded broker's own (Apache Kafka has neither)")
async def test_the_traps_the_broker_documents_are_real(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    # What `broker --help`, EmbeddedBroker's docstring and the quickstart say, on the
    # embedded broker itself: should Tansu fix either, this fails and the docs must change.
    import aiokafka
    from aiokafka.errors import UnknownError

    for trap in ({"enable_idempotence": True}, {"transactional_id": f"t-{uuid.uuid4().hex}"}):
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, **trap)
        try:
            with pytest.raises(UnknownError):
                await asyncio.wait_for(producer.start(), 30)
        finally:
            await producer.stop()
    # End offsets: 10,000 records in one partition, by confluent-kafka (any client does).
    topic = topic_factory(1)
    producer = CkProducer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(10_000):
        producer.produce(topic, b"%d" % i, partition=0)
    assert producer.flush(30) == 0
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        tp = aiokafka.TopicPartition(topic, 0)
        end = (await consumer.end_offsets([tp]))[tp]
    finally:
        await consumer.stop()
    assert end < 10_000  # under-reported...
    records = await asyncio.to_thread(read_all_confluent, bootstrap, topic, 10_000)
    assert len(records) == 10_000  # ...though every record is there


def test_produce_delivery_errors_are_counted_and_shown() -> None:
    # A broker refusing the records (non-retriable INVALID_RECORD) is a situation Tansu
    # cannot be made to produce; librdkafka's mock cluster injects it (see mockcluster.py).
    from mockcluster import MockCluster

    with MockCluster(brokers=1) as mock:
        mock.create_topic("refused", 1)
        mock.push_errors(0, [87] * 5)  # Produce -> INVALID_RECORD, for the next 5 requests
        proc = cli(
            "produce", "refused", "-b", mock.bootstrap_servers, "--no-progress",
            "--linger-ms", "50", stdin="a\nb\nc\n",
        )  # fmt: skip
    assert proc.returncode == 1
    assert "0 record(s) sent to refused, 3 failed" in proc.stderr
    assert "line 1: not delivered: INVALID_RECORD (87)" in proc.stderr


def test_produce_ctrl_c_while_waiting_for_input(
    bootstrap: str, topic_factory: TopicFactory
) -> None:
    # stdin stays open (as a terminal would): Ctrl-C must not hang on the blocked read,
    # and what was already read is delivered and summarized. The command runs as a
    # terminal's foreground job does, with SIGINT at its default: under a shell script's
    # `&` it inherits SIGINT ignored, as every background job does, and then rightly
    # ignores Ctrl-C (asyncio.run hooks SIGINT only where Python's own handler is set).
    topic = topic_factory(1)
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiokafka_lite", "produce", topic, "-b", bootstrap],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
        cwd=REPO_ROOT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(b"one\ntwo\nthree\n")
        proc.stdin.flush()
        assert [r.value for r in read_all_confluent(bootstrap, topic, 3)] == [
            b"one",
            b"two",
            b"three",
        ]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
        err = proc.stderr.read().decode()
        assert "interrupted" in err and "3 record(s) sent" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_console_script_entry_point(capsys: pytest.CaptureFixture[str]) -> None:
    # `pip install` makes `aiokafka-lite` call this function and exit with its result.
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, func = scripts["aiokafka-lite"].partition(":")
    main = getattr(importlib.import_module(module), func)
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("aiokafka-lite ")
    assert main(["topics", "list", "-b", "127.0.0.1:1", "--timeout-ms", "500"]) == 2


def test_broker_on_a_taken_port_says_so() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        proc = cli("broker", "--port", str(port), timeout=30)
    assert proc.returncode == 2
    assert f"127.0.0.1:{port} is already accepting connections" in proc.stderr
    assert proc.stdout == ""  # no address printed for a broker that is not there


def test_broker_that_exits_on_its_own_is_a_failure() -> None:
    # The Tansu process under the command dies (as a crash would): the command notices,
    # says so and exits 1 (it ran, then failed), not 0 as a Ctrl-C stop does.
    proc = subprocess.Popen(
        [sys.executable, "-m", "aiokafka_lite", "broker"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().startswith("127.0.0.1:")
        (tansu,) = psutil.Process(proc.pid).children()
        tansu.kill()
        assert proc.wait(timeout=15) == 1
        assert "the broker exited on its own" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- help and exit codes ----------------------------------------------------------------

EXIT_CODES_HEADER = "exit codes (every command):"


def commands() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every (sub)command of the CLI with its parser: (), ("produce",), ("topics", "list")..."""
    found: list[tuple[tuple[str, ...], argparse.ArgumentParser]] = []

    def walk(path: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
        found.append((path, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk((*path, name), sub)

    walk((), build_parser())
    return found


def without_default(help_text: str) -> str:
    return re.sub(r"\(?default:[^)]*\)?", "", help_text).strip(" ;,.")


@pytest.mark.parametrize("path", [p for p, _ in commands()], ids=lambda p: " ".join(p) or "-")
def test_every_option_has_help_text(path: tuple[str, ...]) -> None:
    parser = dict(commands())[path]
    proc = cli(*path, "--help")
    assert proc.returncode == 0, proc.stderr
    # argparse wraps help text at the terminal width (also after hyphens): compare the
    # texts without their whitespace.
    shown = "".join(proc.stdout.split())
    options = [a for a in parser._actions if not isinstance(a, argparse._SubParsersAction)]
    assert options
    for action in options:
        name = "/".join(action.option_strings) or action.dest
        assert action.help and action.help != argparse.SUPPRESS, f"{path} {name}: no help"
        # More than its default: what the option does.
        assert without_default(action.help), f"{path} {name}: help only states the default"
        for flag in action.option_strings:
            assert flag in shown, f"{path} {name}"
        assert "".join(action.help.split()) in shown, f"{path} {name}: help text not shown"
    # Every command's help ends with the one exit-code convention.
    assert EXIT_CODES_HEADER in proc.stdout
    assert "".join(EXIT_CODES.split()) in shown


def test_the_exit_code_convention_is_the_documented_one() -> None:
    codes = {"0": EXIT_OK, "1": EXIT_FAILED, "2": EXIT_USAGE, "130": EXIT_INTERRUPTED}
    assert list(codes.values()) == [0, 1, 2, 130]
    # docs/cli.md's table has one row per code, in the same words as the --help epilog.
    table = (REPO_ROOT / "docs" / "cli.md").read_text().split("## Exit codes", 1)[1]
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", table, re.M)
    assert [code for code, _ in rows] == list(codes)
    for code, meaning in rows:
        first_words = meaning.split(":")[0].strip()  # "done", "failed", "nothing done", ...
        line = next(ln for ln in EXIT_CODES.splitlines() if ln.strip().startswith(code + " "))
        assert first_words.split()[0] in line, (code, first_words, line)


@pytest.mark.parametrize(
    "args",
    [
        ("produce",),  # no topic
        ("produce", "t", "--format", "xml"),
        ("produce", "t"),  # no -b: it starts no throwaway broker
        ("perf", "--record-size", "10"),  # no --num-records
        ("perf", "--num-records", "0", "--record-size", "10", "-b", "127.0.0.1:1"),
        ("topics", "list"),  # no -b
        ("topics", "create", "-b", "127.0.0.1:1"),  # no topic name
        ("topics", "describe", "-b", "127.0.0.1:1", "--no-such-option"),
        ("broker", "--port", "many"),
        ("nonsense",),
    ],
    ids=" ".join,
)
def test_usage_errors_exit_2_and_do_nothing(args: tuple[str, ...]) -> None:
    proc = cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert "error:" in proc.stderr
    assert proc.stdout == ""
    assert "started an embedded broker" not in proc.stderr


def test_perf_records_that_fail_exit_1(bootstrap: str, topic_factory: TopicFactory) -> None:
    # A record larger than max_request_size is refused at send(): the run stops, failed.
    topic = topic_factory(1)
    proc = cli(
        "perf", "-b", bootstrap, "--topic", topic, "--num-records", "3",
        "--record-size", "2000", "-X", "max_request_size=1024", "--no-progress", "--json",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "send failed after 0 records" in proc.stderr
    assert "max_request_size" in proc.stderr
