"""The broker's ceiling for W3: pre-built Produce requests replayed as fast as it acks them.

W3 (``benchmarks/bench/workloads.py``) sends 1,000,000 keyed records (1,000 distinct keys,
100-byte values) into a new 4-partition topic with acks=all, idempotence off and linger
5 ms, against the embedded Tansu broker or (``--broker kafka``) a 1-node Apache Kafka,
opened by ``benchmarks/bench/brokers.py`` as ``benchmarks.bench`` opens it (a JVM broker
is warmed up first). Every client spends CPU per record on the way:
partitioning, encoding, futures or delivery callbacks. This benchmark measures what is left
when a client spends none at all, i.e. the limit the broker (and the cores it runs on) puts
on W3's throughput:

* Before the clock, the records are placed on partitions by murmur2 (as the default
  partitioner places keyed records), encoded by aiokafka_lite's ``RecordBatchBuilder`` into
  record batches of ``--batch-size`` bytes at most (default: the producers' ``batch_size``,
  16 KiB, ~130 records), and framed into complete Produce requests (acks=all), one batch
  per partition per request, up to ``max_request_size``: what a producer's sender drains
  for one broker at a time.
* With the clock, one plain asyncio TCP connection to the partitions' leader writes those
  bytes, keeping at most ``--in-flight`` requests unanswered (5 is ``max.in.flight``'s
  default), reads every response, checks its correlation id and that each partition's
  error code is 0 (anything else fails the run), and stops when every request is
  acknowledged.

The replay does no per-record work, so no client that sends batches of the same size can
send W3's records faster against the same broker on the same machine: records/s of the
replay is the ceiling for that batch size. Its own CPU per record is shown beside it (a
small fraction of any client's), and so is the broker's. Client and broker share the
machine's cores, so a real client's own CPU can slow the broker too: one more reason why a
client lands below the ceiling.

The broker's work per record depends on the batch shape (it pays per batch and per request
as well as per record). librdkafka does not send 16 KiB batches: its ``batch.size`` is 1 MB
and its batches grow for as long as the linger and the requests in flight let them (one
partition's batch per Produce request), so it sends far fewer, larger batches than a
producer with ``batch_size=16384``. Larger ``--batch-size`` values show the ceiling for
such shapes.

By default every run gets a broker of its own, so that no run inherits what an earlier one
left in the broker's memory (``--shared-broker``: one for all runs, as ``benchmarks.bench``
does; with ``--broker kafka`` it saves a JVM start and warm-up per run). Each repeat runs
the replay (once per batch size and window) and W3's clients (``--clients``, by
``benchmarks.bench``'s names; default ``confluent``, i.e. librdkafka: confluent-kafka's
sync ``Producer``, produce with a delivery callback + poll(0) + flush; linger.ms=5,
acks=all, enable.idempotence=false) through ``benchmarks/bench``'s W3 runners, each on a
fresh topic, in a process of its own; the order alternates between repeats. After every
run the topic is read back with confluent-kafka's consumer (``check.crcs`` on): each
partition must hold exactly the records sent, at contiguous offsets from 0, every key on one
partition (murmur2's, except for librdkafka, whose default partitioner hashes keys with
CRC32). Tansu's high watermark is the last batch's base offset + 1, not the log end offset,
so watermarks cannot count the records.

The table gives medians and ranges over the repeats; below it, each client's records/s
as a fraction of each ceiling (target: 0.90), what "W3 >= 1.5x librdkafka" would need,
and each client's CPU per record against librdkafka's (target: 0.5)::

    python -m benchmarks.broker_ceiling [--records 1000000] [--repeat 3] [--in-flight 5]
        [--batch-size 16384] [--clients confluent,aiokafka_lite,...] [--broker kafka]
        [--shared-broker] [--idempotence off|on|both]

``--in-flight`` and ``--batch-size`` take one value or a comma-separated list (each
combination is a row).

``--idempotence on`` runs the idempotent twin of everything: the replay asks
InitProducerId for a producer id and epoch and stamps them on its batches, each batch's
base sequence being the count of its partition's records before it (the broker checks
them, and takes up to 5 batches per partition in flight, as from an idempotent
producer); the clients run W3/idem (enable.idempotence=true for each). ``both`` runs
both kinds, and each client is compared with the ceiling and the librdkafka of its own
kind. Idempotence changes what a client may keep in flight: without it, aiokafka_lite
(and aiokafka) keep one batch per partition in flight, so that a retried batch cannot
land behind a later one; with it, sequence numbers keep that order across up to 5.
``java`` (Java's ``ProducerPerformance``) sends keyless records: its topic is read back
without a key check, and the others' CPU per record is set against its too.

The modules, by concern:

* :mod:`.settings`: what the runs share (W3, the producers' defaults, the module's name)
* :mod:`.prebuild`: before the clock, W3's records as framed Produce requests
* :mod:`.replay`: the plain asyncio connection, the timed replay, its worker process
* :mod:`.runner`: the parent's runs, each topic read back with confluent-kafka
* :mod:`.report`: medians per label, the table, the comparison and the footer
* :mod:`.cli`: the options, and the rounds they ask for
"""
