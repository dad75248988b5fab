"""InitProducerId for the idempotent producer without a transactional id: a new producer id.

Asked of the least-loaded broker, retried until it works, until a retry cannot help
(the error is raised), or until the producer stops (None). Only at start, and once the
epoch of the id is exhausted: the next epoch after a failure is taken locally, as
Java's producer does (:meth:`~aiokafka_lite._internal.idempotence.IdempotenceState.bumped`),
since Kafka answers any InitProducerId without a transactional id with a new producer
id, naming the current id and epoch (v3+) or not.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from ..errors import KafkaConnectionError, KafkaError, error_from_response
from .backoff import backoff_delay
from .client import NetworkClient
from .protocol.transactions import InitProducerIdRequest, InitProducerIdResponse

__all__ = ["fetch_producer_id"]

log = logging.getLogger("aiokafka_lite.producer_id")


async def fetch_producer_id(
    client: NetworkClient,
    backoff_ms: tuple[float, float],
    running: Callable[[], bool],
    on_error: Callable[[BaseException | None], None],
) -> tuple[int, int] | None:
    """(producer id, epoch), or None once ``running()`` is false.

    Raises the KafkaError no retry can fix. ``on_error`` is told why each attempt
    failed (and None once one worked), so that records held back can say why.
    ``backoff_ms`` (``retry_backoff_ms``, ``retry_backoff_max_ms``; never zero: a failure
    before any await would spin) sets the wait between attempts, doubling with each
    failure in a row as Java's (KIP-580): a broker whose answers we cannot use is not
    asked again every ``retry_backoff_ms``.
    """
    failures = 0
    while running():
        node_id = client.least_loaded_node(time.monotonic())
        try:
            if node_id is None:
                raise KafkaConnectionError("no broker is reachable")
            conn = await client.connect(node_id)
            response: InitProducerIdResponse = await conn.send(
                InitProducerIdRequest(
                    transactional_id=None,
                    transaction_timeout_ms=60000,
                    producer_id=-1,
                    producer_epoch=-1,
                ),
                conn.version_for(InitProducerIdRequest),
            )
            if response.error_code:
                raise error_from_response(
                    response.error_code,
                    message="the broker refused a producer id (InitProducerId)",
                )
        except KafkaError as e:
            if not e.retriable:
                raise
            log.info("InitProducerId failed (%s); retrying", e)
            on_error(e)
        except Exception as e:  # not the broker's doing: retried, never lost
            log.warning("InitProducerId failed (%r); retrying", e)
            on_error(e)
        else:
            on_error(None)
            return response.producer_id, response.producer_epoch
        failures += 1
        await asyncio.sleep(backoff_delay(*backoff_ms, failures))
    return None
