"""InitProducerId for the idempotent producer without a transactional id: a new producer id.

Asked of the least-loaded broker, retried until it works, until a retry cannot help
(the error is raised), or until the producer stops (None). Only at start, and once the
epoch of the id is exhausted: the next epoch after a failure is taken locally, as
Java's producer does (:meth:`~aiokafka_lite.idempotence.IdempotenceState.bumped`),
since Kafka answers any InitProducerId without a transactional id with a new producer
id, naming the current id and epoch (v3+) or not.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from .client import NetworkClient
from .errors import KafkaConnectionError, KafkaError, error_from_response
from .protocol.transactions import InitProducerIdRequest, InitProducerIdResponse

__all__ = ["fetch_producer_id"]

log = logging.getLogger("aiokafka_lite.producer_id")


async def fetch_producer_id(
    client: NetworkClient,
    backoff: float,
    running: Callable[[], bool],
    on_error: Callable[[BaseException | None], None],
) -> tuple[int, int] | None:
    """(producer id, epoch), or None once ``running()`` is false.

    Raises the KafkaError no retry can fix. ``on_error`` is told why each attempt
    failed (and None once one worked), so that records held back can say why.
    ``backoff`` (seconds, never zero: a failure before any await would spin) is the
    wait between attempts.
    """
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
            await asyncio.sleep(backoff)
            continue
        except Exception as e:  # not the broker's doing: retried, never lost
            log.warning("InitProducerId failed (%r); retrying", e)
            on_error(e)
            await asyncio.sleep(backoff)
            continue
        on_error(None)
        return response.producer_id, response.producer_epoch
    return None
