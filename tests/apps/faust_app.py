"""A Faust app run unchanged on aiokafka_lite's producer (tests/test_frameworks.py runs it).

``python faust_app.py BOOTSTRAP SOURCE SINK COUNTS worker -l info``: ``patch_aiokafka()``
comes first, then Faust is imported and builds its producer as always. The agent doubles
each order to SINK and counts orders per customer in a table (its changelog is Faust's own
topic); the counts are also sent to COUNTS. Prints the producer class once started.
"""

from __future__ import annotations

import sys

import aiokafka_lite

aiokafka_lite.patch_aiokafka()

import faust  # noqa: E402

BOOTSTRAP, SOURCE, SINK, COUNTS = sys.argv[1:5]
del sys.argv[1:5]  # the rest is Faust's command line

app = faust.App(
    f"lite-{SOURCE}",
    broker=f"kafka://{BOOTSTRAP}",
    store="memory://",
    web_enabled=False,
    topic_partitions=1,
    producer_linger_ms=1,
    # Tansu completes a group's first join after a delay that grows with the rebalance
    # timeout (measured: ~30 s with Faust's default of 60 s, ~5 s with 4 s).
    broker_rebalance_timeout=4.0,
    broker_session_timeout=10.0,
    broker_heartbeat_interval=1.0,
)


class Order(faust.Record, serializer="json"):
    customer: str
    amount: int


source = app.topic(SOURCE, value_type=Order)
sink = app.topic(SINK, value_type=Order)
counts_topic = app.topic(COUNTS, key_type=str, value_type=int)
counts = app.Table("orders-per-customer", default=int, partitions=1)


@app.agent(source)
async def double(orders: faust.StreamT[Order]) -> None:
    async for order in orders.group_by(Order.customer):
        counts[order.customer] += 1
        await sink.send(key=order.customer, value=Order(order.customer, order.amount * 2))
        await counts_topic.send(key=order.customer, value=counts[order.customer])


@app.task
async def report() -> None:
    cls = type(app.producer._producer)
    print(f"producer: {cls.__module__}.{cls.__qualname__}", flush=True)  # one line: Faust logs it


if __name__ == "__main__":
    app.main()
