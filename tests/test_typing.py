"""What a type checker sees of the public API: ``AIOKafkaProducer[K, V]``.

These run mypy (strict) on small user programs, as a user's CI would, and check
both that correct code passes and that a wrong key or value type is reported at
the ``send()`` call.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROGRAM = """
from dataclasses import dataclass
from aiokafka_lite import AIOKafkaProducer

@dataclass
class Order:
    id: int

def order_bytes(order: Order) -> bytes:
    return str(order.id).encode()

def key_bytes(key: str) -> bytes:
    return key.encode()

async def main() -> None:
    typed = AIOKafkaProducer(key_serializer=key_bytes, value_serializer=order_bytes)
    plain = AIOKafkaProducer(bootstrap_servers="localhost:9092", value_serializer="json")
    annotated: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer()
    reveal_type(typed)
    reveal_type(plain)
    await typed.send("orders", Order(1), key="user-1")
    await plain.send("anything", {"goes": 1})
    await annotated.send("raw", b"value", key=b"key")
    {extra}
"""


def run_mypy(tmp_path: Path, extra: str = "") -> subprocess.CompletedProcess[str]:
    source = tmp_path / "user_program.py"
    source.write_text(textwrap.dedent(PROGRAM).replace("{extra}", extra))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def correct_program(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    return run_mypy(tmp_path_factory.mktemp("typing"))


def test_key_and_value_types_are_inferred_from_the_serializers(
    correct_program: subprocess.CompletedProcess[str],
) -> None:
    out = correct_program.stdout
    assert (
        'Revealed type is "aiokafka_lite.producer.AIOKafkaProducer[str, user_program.Order]"' in out
    )
    # Without a typed serializer, K and V default to Any: no annotation needed.
    assert 'Revealed type is "aiokafka_lite.producer.AIOKafkaProducer[Any, Any]"' in out, out
    assert correct_program.returncode == 0, out
    assert "Success: no issues found" in out, out


def test_a_wrong_value_type_is_reported_at_the_send_call(tmp_path: Path) -> None:
    result = run_mypy(tmp_path, extra='await typed.send("orders", {"id": 1}, key="user-1")')
    assert result.returncode == 1
    assert 'Argument 2 to "send" of "AIOKafkaProducer" has incompatible type' in result.stdout
    assert '"Order | None"' in result.stdout, result.stdout


def test_a_wrong_key_type_is_reported_at_the_send_call(tmp_path: Path) -> None:
    result = run_mypy(tmp_path, extra='await typed.send("orders", Order(2), key=b"raw")')
    assert result.returncode == 1
    assert 'Argument "key" to "send" of "AIOKafkaProducer"' in result.stdout, result.stdout
