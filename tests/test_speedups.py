"""The compiled twins: which implementation is in use, and that each twin gives what its
pure module gives (bytes of a batch, murmur2), whichever build runs the suite.

CI runs the whole suite twice: once as installed (compiled; it sets
``AIOKAFKA_LITE_EXPECT_COMPILED=1`` so that a build that silently fell back to pure
Python fails here), and once with ``AIOKAFKA_LITE_NO_EXTENSIONS=1``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aiokafka_lite
from aiokafka_lite import speedups
from aiokafka_lite._internal import (
    _twin_contracts,
    append_core,
    delivery,
    partitioner,
    records,
    send_path,
)

ROOT = Path(__file__).resolve().parent.parent


def _compiled(name: str) -> Any:
    try:
        return importlib.import_module(f"aiokafka_lite.{speedups.TWIN_PACKAGE}.{name}")
    except ImportError:
        return None


CRECORDS = _compiled("_crecords")
CPARTITIONER = _compiled("_cpartitioner")
BUILT = all(_compiled(twin.compiled) is not None for twin in speedups.TWINS)
needs_build = pytest.mark.skipif(not BUILT, reason="the extension is not built")

PROBE = """
import json
import aiokafka_lite
from aiokafka_lite import speedups
from aiokafka_lite._internal import batch_builder, delivery, partitioner, records, send_path
print(json.dumps({
    "compiled": speedups.COMPILED,
    "reason": speedups.REASON,
    "builder": records.RecordBatchBuilder.__module__,
    "murmur2": partitioner.murmur2 is partitioner.py_murmur2,
    "futures": delivery.RecordFutures.__module__,
    "send_path": send_path.SendPath.__module__,
    "batch_builder": batch_builder.BatchBuilder.__module__,
}))
"""


def probe(**env: str) -> dict[str, Any]:
    """What a fresh interpreter picks, with ``env`` added to this one's environment."""
    environ = {k: v for k, v in os.environ.items() if k != speedups.ENV_VAR}
    # The package this process imported (a source tree or an installed wheel), not ROOT.
    where = Path(aiokafka_lite.__file__).resolve().parent.parent
    environ["PYTHONPATH"] = os.pathsep.join([str(where), environ.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**environ, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_this_process_uses_what_the_environment_asks_for() -> None:
    forced = os.environ.get(speedups.ENV_VAR, "") not in ("", "0")
    if forced:
        reason = speedups.REASON
        assert not speedups.COMPILED
        assert reason == f"{speedups.ENV_VAR} is set"
    else:
        assert speedups.COMPILED is BUILT
    if os.environ.get("AIOKAFKA_LITE_EXPECT_COMPILED") == "1":
        assert speedups.COMPILED, speedups.REASON
    # Every twin follows the one switch: never a mix.
    assert (records.RecordBatchBuilder is not records.PyRecordBatchBuilder) is speedups.COMPILED
    assert (partitioner.murmur2 is not partitioner.py_murmur2) is speedups.COMPILED
    assert (delivery.RecordFutures is not delivery.PyRecordFutures) is speedups.COMPILED
    assert (send_path.SendPath is not send_path.PySendPath) is speedups.COMPILED
    assert (send_path.ProducerBatchBase is not send_path.PyProducerBatchBase) is speedups.COMPILED
    assert (append_core.append_record is not append_core.py_append_record) is speedups.COMPILED


def test_the_environment_variable_forces_pure_python() -> None:
    pure = probe(AIOKAFKA_LITE_NO_EXTENSIONS="1")
    assert pure == {
        "compiled": False,
        "reason": "AIOKAFKA_LITE_NO_EXTENSIONS is set",
        "builder": "aiokafka_lite._internal.records",
        "murmur2": True,
        "futures": "aiokafka_lite._internal.delivery",
        "send_path": "aiokafka_lite._internal.send_path",
        "batch_builder": "aiokafka_lite._internal.batch_builder",
    }
    default = probe(AIOKAFKA_LITE_NO_EXTENSIONS="0")  # "0" means not set
    assert default["compiled"] is BUILT
    if BUILT:
        assert default["builder"] == "aiokafka_lite._internal._crecords"
        assert default["futures"] == "aiokafka_lite._internal._cdelivery"
        assert default["send_path"] == "aiokafka_lite._internal._csend_path"
        assert default["batch_builder"] == "aiokafka_lite._internal._cbatch_builder"
        assert default["murmur2"] is False


# -- the contract each pure module and its twin share (speedups.TWINS) ----------------


def _public(obj: Any) -> set[str]:
    return {n for n in dir(obj) if not n.startswith("_")}


def _signature(obj: Any) -> list[tuple[str, Any, bool]] | None:
    """Parameter names, kinds and which have defaults (the compiled twin's signature,
    from Cython's embedded text, carries no annotations)."""
    try:
        parameters = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind, p.default is inspect.Parameter.empty) for p in parameters]


@pytest.mark.parametrize("twin", speedups.TWINS, ids=lambda t: t.compiled)
def test_each_pure_module_binds_what_its_twin_declares(twin: speedups.Twin) -> None:
    """The pure module takes exactly the declared names from its twin when compiled, and
    keeps its own implementation of each under the declared second name."""
    if twin.pure is None:
        return
    pure = importlib.import_module(f"aiokafka_lite.{speedups.TWIN_PACKAGE}.{twin.pure}")
    compiled = speedups.compiled_module(twin.compiled)
    for name, own in twin.names.items():
        implementation = getattr(pure, own)
        in_use = getattr(pure, name)
        if compiled is None:
            assert in_use is implementation, (twin.pure, name)
        else:
            assert in_use is getattr(compiled, name), (twin.pure, name)
    # Nothing else of the twin is taken: names bound to the compiled module are declared.
    if compiled is not None:
        taken = {
            n for n, v in vars(pure).items() if getattr(v, "__module__", None) == compiled.__name__
        }
        assert taken <= set(twin.names), taken - set(twin.names)


def _members(contract: type) -> set[str]:
    """The public attributes and methods a Protocol declares (its Protocol bases' too)."""
    names: set[str] = set()
    for cls in contract.__mro__:
        if cls.__module__ in ("typing", "builtins"):
            continue
        names |= {n for n in vars(cls) if not n.startswith("_")}
        names |= {n for n in vars(cls).get("__annotations__", {}) if not n.startswith("_")}
    return names


def _compiled_constructor(cls: type) -> list[tuple[str, bool]] | None:
    """Parameter names, and which have no default, of a compiled class's constructor, from
    the signature Cython embeds in its docstring (``embedsignature``): ``inspect`` sees
    none. Only names and defaults: Cython's text may put the keyword-only marker in the
    wrong place (``BatchBuilder(..., key_serializer=None, *, value_serializer=None)``)."""
    for klass in cls.__mro__:
        first = (klass.__doc__ or "").partition("\n")[0]
        found = re.fullmatch(rf"{klass.__name__}\((.*)\)", first)
        if found:
            params = [p.strip() for p in found.group(1).split(",") if p.strip()]
            return [(p.partition("=")[0].split()[-1], "=" not in p) for p in params if p != "*"]
    return None


@pytest.mark.parametrize(
    "twin", [t for t in speedups.TWINS if t.pure is not None], ids=lambda t: t.compiled
)
def test_each_twin_keeps_its_contract(twin: speedups.Twin) -> None:
    """Both implementations of each twinned name are what ``_twin_contracts`` declares
    (which ``mypy`` checks the pure one against, statically): a class has exactly the
    contract's public members, with its methods' parameter names, kinds and defaults, and
    its constructor's; a function has the contract's parameters; a constant its type. The
    compiled side is checked where it was built, whichever build runs the suite."""
    assert twin.pure is not None
    contracts = _twin_contracts.CONTRACTS[twin.compiled]
    assert set(contracts) == set(twin.names)  # the contract covers the twin, no more
    pure = importlib.import_module(f"aiokafka_lite.{speedups.TWIN_PACKAGE}.{twin.pure}")
    compiled = _compiled(twin.compiled)
    for name, own in twin.names.items():
        call, made = contracts[name]
        sides = {"pure": getattr(pure, own)}
        if compiled is not None:
            sides["compiled"] = getattr(compiled, name)
        if "__call__" not in vars(call):  # a constant: the contract is its type
            assert all(type(v) is call for v in sides.values()), name
            continue
        wanted = _signature(call.__call__)
        assert wanted is not None
        wanted = wanted[1:]  # without the protocol's self
        for side, impl in sides.items():
            got = _signature(impl)
            if got is None:
                got_names = _compiled_constructor(impl)
                if got_names is None:  # no __init__ of its own: it takes nothing
                    assert wanted == [], (name, side)
                    impl()
                else:
                    assert got_names == [(n, empty) for n, _, empty in wanted], (name, side)
            else:
                assert got == wanted, (name, side)
            if made is None:
                continue
            members = _members(made)
            assert _public(impl) == members, (name, side, _public(impl) ^ members)
            for member in members:
                declared = inspect.getattr_static(made, member, None)
                if not inspect.isfunction(declared):
                    continue  # an attribute or a property
                theirs = _signature(getattr(impl, member))
                if theirs is not None or side == "pure":
                    assert theirs == _signature(declared), (name, side, member)


def test_the_contracts_are_those_of_the_declared_twins() -> None:
    assert set(_twin_contracts.CONTRACTS) == {
        t.compiled for t in speedups.TWINS if t.pure is not None
    }


def test_setup_builds_the_declared_twins() -> None:
    """setup.py compiles exactly the twins speedups.TWINS declares: its list comes from
    its ``_twins()``, which reads that declaration (run here on its own: setup.py's
    imports need setuptools, which a test environment need not have)."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    (twins_def,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_twins"]
    namespace: dict[str, Any] = {"ast": ast, "Path": Path, "__file__": str(ROOT / "setup.py")}
    exec(compile(ast.Module([twins_def], []), "setup.py", "exec"), namespace)
    assert namespace["_twins"]() == (speedups.TWIN_PACKAGE, [t.compiled for t in speedups.TWINS])
    assert "= _twins()" in (ROOT / "setup.py").read_text()
    for twin in speedups.TWINS:
        assert (ROOT / "aiokafka_lite" / speedups.TWIN_PACKAGE / f"{twin.compiled}.pyx").exists()


# -- the compiled encoder writes the pure encoder's bytes -------------------------------

payload = st.none() | st.binary(max_size=300)
header = st.tuples(st.text(max_size=20), st.none() | st.binary(max_size=40))
record = st.tuples(
    st.integers(-(2**40), 2**40),  # timestamp delta
    payload,
    payload,
    st.lists(header, max_size=3),
)


def _close_both(pure: Any, compiled: Any, **header_fields: Any) -> None:
    assert compiled.count == pure.count
    assert compiled.max_timestamp == pure.max_timestamp
    assert bytes(compiled.close(**header_fields)) == bytes(pure.close(**header_fields))


@needs_build
@settings(max_examples=300, deadline=None)
@given(
    base=st.integers(0, 2**45),
    records_=st.lists(record, max_size=40),
    limit=st.integers(0, 3000),
    transactional=st.booleans(),
)
def test_compiled_append_writes_the_same_bytes(
    base: int, records_: list[Any], limit: int, transactional: bool
) -> None:
    pure, compiled = records.PyRecordBatchBuilder(base), CRECORDS.RecordBatchBuilder(base)
    for delta, key, value, headers in records_:
        added = pure.append(base + delta, key, value, headers, limit)
        assert compiled.append(base + delta, key, value, headers, limit) == added
        assert compiled.buf == pure.buf
    _close_both(pure, compiled, producer_id=77, producer_epoch=3, base_sequence=9,
                transactional=transactional)  # fmt: skip


@needs_build
@settings(max_examples=200, deadline=None)
@given(
    pairs=st.lists(st.tuples(payload, payload), max_size=60),
    start=st.integers(0, 5),
    limit=st.integers(0, 4000),
    # up to sys.maxsize: a budget with no bound must not overflow the compiled arithmetic
    budget=st.integers(0, 4000) | st.integers(sys.maxsize - 5000, sys.maxsize),
    prefilled=st.integers(0, 3),
)
def test_compiled_append_many_stops_where_pure_stops(
    pairs: list[Any], start: int, limit: int, budget: int, prefilled: int
) -> None:
    keys = [k for k, _ in pairs]
    values = [v for _, v in pairs]
    order = list(range(len(pairs)))[::-1]  # not the identity: indices are followed
    pure, compiled = records.PyRecordBatchBuilder(10), CRECORDS.RecordBatchBuilder(10)
    for b in (pure, compiled):
        for _ in range(prefilled):
            b.append(11, b"k", b"v", None, 1 << 20)
    stop = pure.append_many(12, keys, values, order, start, limit, budget)
    assert compiled.append_many(12, keys, values, order, start, limit, budget) == stop
    assert compiled.buf == pure.buf
    _close_both(pure, compiled)


@needs_build
def test_compiled_encoder_takes_any_bytes_like_and_compresses_the_same() -> None:
    from aiokafka_lite._internal.compression import get_codec

    codec = get_codec("gzip")
    assert codec is not None
    pure = records.PyRecordBatchBuilder(0, codec.compressor(None), codec.id)
    compiled = CRECORDS.RecordBatchBuilder(0, codec.compressor(None), codec.id)
    for b in (pure, compiled):
        b.append(1, bytearray(b"key"), memoryview(b"value"), [("h", bytearray(b"x"))], 1000)
        b.append(2, None, None, None, 1000)
    _close_both(pure, compiled)


@needs_build
def test_compiled_encoder_refuses_what_pure_refuses_without_appending() -> None:
    for cls in (records.PyRecordBatchBuilder, CRECORDS.RecordBatchBuilder):
        b = cls(0)
        with pytest.raises(TypeError):
            b.append(1, "text is not bytes", b"v", None, 1000)
        assert (b.count, bytes(b.buf)) == (0, bytes(records.BATCH_HEADER_SIZE))


# -- murmur2 -------------------------------------------------------------------------------


@needs_build
@settings(max_examples=1000, deadline=None)
@given(data=st.binary(max_size=600), n=st.integers(1, 10_000))
def test_compiled_murmur2_equals_pure(data: bytes, n: int) -> None:
    assert CPARTITIONER.murmur2(data) == partitioner.py_murmur2(data)
    assert CPARTITIONER.murmur2_u32(data) == partitioner.py_murmur2_u32(data)
    assert CPARTITIONER.default_partition(data, n) == partitioner.py_default_partition(data, n)
    assert CPARTITIONER.murmur2(bytearray(data)) == partitioner.py_murmur2(data)


# send_many()'s items: mostly plain (bytes, bytes | None) pairs, some that are not (no key,
# a str, a list, a wrong-length tuple, too large): each twin must stop at the same index.
plain_pair = st.tuples(st.binary(max_size=40), st.none() | st.binary(max_size=60))
odd_item = st.sampled_from(
    [(None, b"v"), ("k", b"v"), (b"k", "v"), [b"k", b"v"], (b"k",), (b"k", b"v", b"x"), 7]
) | st.tuples(st.binary(min_size=1, max_size=4), st.binary(min_size=90, max_size=120))


def _place_all(place: Any, items: list[Any], partition: int | None, n: int) -> Any:
    keys: list[Any] = [None] * len(items)
    values: list[Any] = [None] * len(items)
    by_partition: dict[int, list[int]] = {}
    stops, i = [], 0
    while i < len(items):  # as the producer does: resume after each record it stopped at
        i = place(
            items,
            i,
            len(items),
            keys,
            values,
            0,
            partition,
            n,
            100,
            partitioner.KeyHashCache(),
            by_partition,
        )
        stops.append(i)
        i += 1
    return stops, by_partition, keys, values


@needs_build
@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(plain_pair | odd_item, max_size=60),
    partition=st.none() | st.integers(0, 5),
    n=st.integers(1, 50),
)
def test_compiled_place_plain_places_as_pure(
    items: list[Any], partition: int | None, n: int
) -> None:
    got = _place_all(CPARTITIONER.place_plain, items, partition, n)
    assert got == _place_all(partitioner.py_place_plain, items, partition, n)
    _, by_partition, keys, _ = got
    for p, order in by_partition.items():  # each partition's records in input order
        assert order == sorted(order)
        if partition is None:
            assert all(partitioner.py_default_partition(keys[i], n) == p for i in order)


@needs_build
def test_compiled_murmur2_java_vectors() -> None:
    rows = (ROOT / "tests" / "data" / "murmur2-vectors.tsv").read_text().splitlines()
    header, *lines = (row.split("\t") for row in rows)
    col = {name: i for i, name in enumerate(header)}
    assert len(lines) >= 40
    for row in lines:
        key = bytes.fromhex(row[col["key_hex"]])
        assert CPARTITIONER.murmur2(key) == int(row[col["murmur2_signed32"]])
        assert CPARTITIONER.default_partition(key, 7) == int(row[col["partition_of_7"]])
        assert CPARTITIONER.default_partition(key, 100) == int(row[col["partition_of_100"]])


STALE = """
import importlib.util, json, os, sys, sysconfig, types
# A twin built from older sources: the real module minus one name of its contract. (A
# stale .so cannot be made here without building old sources; this stands in for it.)
# Loaded from its file, so that aiokafka_lite itself is not imported yet.
where = os.path.join(sys.argv[1], "aiokafka_lite", "_internal")
path = os.path.join(where, "_cpartitioner" + sysconfig.get_config_var("EXT_SUFFIX"))
spec = importlib.util.spec_from_file_location("aiokafka_lite._internal._cpartitioner", path)
real = importlib.util.module_from_spec(spec)
spec.loader.exec_module(real)
assert "aiokafka_lite" not in sys.modules
stale = types.ModuleType(real.__name__)
stale.__dict__.update({k: v for k, v in vars(real).items() if k != "sticky_moves_on"})
sys.modules[real.__name__] = stale
from aiokafka_lite import speedups
from aiokafka_lite._internal import partitioner, records
print(json.dumps({"compiled": speedups.COMPILED, "reason": speedups.REASON,
                  "builder": records.RecordBatchBuilder.__module__}))
"""


@needs_build
def test_an_out_of_date_twin_falls_back_to_pure_python_and_says_why() -> None:
    """A checkout updated without rebuilding: ``import aiokafka_lite`` works (all pure, as
    for a missing twin), and the reason, shown by ``--version``, says to rebuild."""
    environ = {k: v for k, v in os.environ.items() if k != speedups.ENV_VAR}
    where = Path(aiokafka_lite.__file__).resolve().parent.parent
    environ["PYTHONPATH"] = os.pathsep.join([str(where), environ.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-c", STALE, str(where)],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout)
    assert seen["compiled"] is False
    assert "_cpartitioner is out of date (no sticky_moves_on)" in seen["reason"]
    assert "rebuild" in seen["reason"]
    assert seen["builder"] == "aiokafka_lite._internal.records"


@pytest.mark.skipif(not speedups.COMPILED, reason="the pure build")
def test_compiled_arrow_rows_size_records_as_records_does() -> None:
    # The Spark Arrow path checks max_request_size with records.record_size's overhead,
    # which it keeps as a C constant (records imports the compiled twins).
    from aiokafka_lite._internal.records import RECORD_OVERHEAD

    assert _compiled("_carrow_rows").SIZE_OVERHEAD == RECORD_OVERHEAD


@needs_build
@settings(max_examples=100, deadline=None)
@given(pairs=st.lists(plain_pair, min_size=1, max_size=30), base=st.integers(1, 10_000))
def test_compiled_twins_read_and_write_a_chunk_from_its_base(pairs: list[Any], base: int) -> None:
    """send_many() keeps one chunk's keys/values, record ``i`` at ``i - base``: both twins
    of place_plain and append_many write and read there, the same bytes as from lists of
    the whole call, and refuse an index outside the lists (the compiled code is built
    without bounds checks: an unchecked index would read or write past the list)."""
    items = [None] * base + pairs  # (records before base are another chunk's)
    n, hi = len(pairs), base + len(pairs)
    built = []
    for place, builder in (
        (partitioner.py_place_plain, records.PyRecordBatchBuilder),
        (CPARTITIONER.place_plain, CRECORDS.RecordBatchBuilder),
    ):
        keys: list[Any] = [None] * n
        values: list[Any] = [None] * n
        by_partition: dict[int, list[int]] = {}
        args = (None, 3, 1 << 20, partitioner.KeyHashCache(), by_partition)
        assert place(items, base, hi, keys, values, base, *args) == hi
        assert (keys, values) == ([k for k, _ in pairs], [v for _, v in pairs])
        with pytest.raises(IndexError):  # one record past the lists
            place(items + pairs[:1], base, hi + 1, keys, values, base, *args)
        with pytest.raises(IndexError):  # records before base
            place(items, base - 1, hi, keys, values, base, *args)
        order = [i for p in sorted(by_partition) for i in by_partition[p]]
        b = builder(10)
        assert b.append_many(12, keys, values, order, 0, 1 << 30, 1 << 30, 0, base) == n
        for outside in (base - 1, hi):
            with pytest.raises(IndexError):
                builder(10).append_many(12, keys, values, [outside], 0, 1 << 30, 1 << 30, 0, base)
        whole = builder(10)  # the same records from lists of the whole call
        whole_keys = [None] * base + keys
        whole_values = [None] * base + values
        assert whole.append_many(12, whole_keys, whole_values, order, 0, 1 << 30, 1 << 30) == n
        assert b.buf == whole.buf
        built.append(b)
    assert built[0].buf == built[1].buf
