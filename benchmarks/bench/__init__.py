"""Side-by-side producer benchmarks: aiokafka_lite against its peer clients.

Run from the repository root::

    python -m benchmarks.bench --quick                    # W1-W6, small N, one run, ~1 min
    python -m benchmarks.bench --workloads W1 --clients aiokafka_lite,aiokafka,confluent
    python -m benchmarks.bench                            # median of 3 interleaved runs
    python -m benchmarks.bench --workloads W1,W1/unique,W2,W3 --pure   # + pure-Python twin
    python -m benchmarks.bench --sizes                    # W1 at 10 B, 1 KB, 10 KB, 100 KB
    python -m benchmarks.bench --idempotence              # W1 and W3 with idempotence on
    python -m benchmarks.bench --workloads W1,W3 --sizes  # --workloads plus the extras
    python -m benchmarks.bench --workloads W5-small --clients aiokafka_lite  # 10x, small
    python -m benchmarks.bench --broker kafka --workloads W1,W3,keyless  # + Java's producer

One broker is started by the parent process (``--broker``: the embedded Tansu broker, or
a 1-node Apache Kafka from ``tests/kafka_cluster.py``); every (workload, client) run is a
fresh worker subprocess with a fresh topic, so no client's imports, threads, memory
or garbage affect another's figures. A worker prints one ``BENCH-RESULT {json}`` line;
the parent collects those, prints a table and writes everything to
``benchmarks/results/latest.json`` (and a chart of records/s to ``latest.png`` if
matplotlib is importable).

The modules, by concern:

* :mod:`.workloads`: W1-W6 and the extras, described; their settings and records
* :mod:`.clients`: the async clients behind one interface; which clients can run here
* :mod:`.run_async`, :mod:`.run_confluent`, :mod:`.run_kafka_python`: each workload on
  each client (aiokafka_lite and aiokafka share the async runners with confluent-aio)
* :mod:`.measure`: a run's result, wall and CPU time, RSS sampling, latency percentiles
* :mod:`.run_java`: Java's KafkaProducer (kafka-tools' ProducerPerformance, client
  ``java``), run and measured from the parent: a JVM is its own process already
* :mod:`.worker`: the worker process (which runner runs a workload on a client)
* :mod:`.processes`: the parent's side of process isolation; the W5 proxy
* :mod:`.brokers`: the broker of a run (Tansu or Apache Kafka)
* :mod:`.plan`: what an invocation runs, interleaved across clients and repeats
* :mod:`.stats`: medians and ranges over the repeats, ratios against the peers
* :mod:`.report`: table, footer, chart and JSON; :mod:`.cli`: the options

To add a workload: describe it in ``WORKLOADS`` (:mod:`.workloads`) and register a runner
per client in ``RUNNERS`` (:mod:`.worker`, under the workload's ``kind``); async clients
share one runner per workload through ``AsyncClient``.
"""
