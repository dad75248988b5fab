"""A kstreams app run unchanged on aiokafka_lite's producer (tests/test_frameworks.py runs it).

``python kstreams_app.py BOOTSTRAP SOURCE SINK BATCHED N``: ``patch_aiokafka()`` comes first, then
kstreams is imported, so its ``Producer`` (a subclass of ``aiokafka.AIOKafkaProducer``,
defined at import) subclasses aiokafka_lite's. The app sends N records to SOURCE; a stream
(aiokafka's consumer, in a group) forwards each to SINK, upper-cased. Then one record and
a ``send_many`` of N (kstreams places them with the producer's ``_partitioner``) go to
BATCHED. Prints a JSON line.
"""

import asyncio
import json
import sys

import aiokafka_lite

aiokafka_lite.patch_aiokafka()

from kstreams import BatchEvent, ConsumerRecord, create_engine  # noqa: E402
from kstreams.backends import Kafka  # noqa: E402

BOOTSTRAP, SOURCE, SINK, BATCHED = sys.argv[1:5]
N = int(sys.argv[5])

engine = create_engine(title="lite", backend=Kafka(bootstrap_servers=[BOOTSTRAP]))
forwarded: asyncio.Queue[str] = asyncio.Queue()


@engine.stream(SOURCE, group_id=f"g-{SOURCE}", auto_offset_reset="earliest")
async def forward(cr: ConsumerRecord[str, bytes]) -> None:
    await engine.send(SINK, value=cr.value.upper(), key=cr.key, headers={"from": SOURCE})
    await forwarded.put(cr.key)


async def main() -> None:
    await engine.start()
    producer = engine._producer
    offsets = []
    for i in range(N):
        md = await engine.send(SOURCE, value=f"v{i}".encode(), key=f"k{i}", headers={"n": str(i)})
        offsets.append(md.offset)
    keys = [await asyncio.wait_for(forwarded.get(), 60) for _ in range(N)]
    await engine.send(BATCHED, value=b"single", key="single")
    events = [BatchEvent(value=f"w{i}".encode(), key=f"b{i}") for i in range(N)]
    batches = await engine.send_many(BATCHED, batch_events=events)
    await engine.stop()
    bases = [c.__module__ + "." + c.__qualname__ for c in type(producer).__mro__[1:3]]
    print(
        json.dumps(
            {"bases": bases, "offsets": offsets, "forwarded": keys, "batches": len(batches)}
        ),
        flush=True,
    )


asyncio.run(main())
