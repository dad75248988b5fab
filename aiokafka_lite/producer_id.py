"""InitProducerId for the idempotent producer: a new producer id, or the next epoch of ours.

Asked of the least-loaded broker, retried until it works, until a retry cannot help
(the error is raised), or until the producer stops (None). An epoch bump (v3+, KIP-360)
that the broker refuses falls back to asking for a new producer id, which a producer
without a transactional id may do.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from .client import NetworkClient
from .errors import KafkaConnectionError, KafkaError, error_from_response
from .idempotence import IdempotenceState
from .protocol.transactions import InitProducerIdRequest, InitProducerIdResponse

__all__ = ["fetch_producer_id"]

log = logging.getLogger("aiokafka_lite.producer_id")


async def fetch_producer_id(
    client: NetworkClient,
    idem: IdempotenceState,
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
    refused = False
    while running():
        node_id = client.least_loaded_node(time.monotonic())
        bump = False  # also when connect() itself fails (e.g. authentication)
        try:
            if node_id is None:
                raise KafkaConnectionError("no broker is reachable")
            conn = await client.connect(node_id)
            version = conn.version_for(InitProducerIdRequest)
            bump = idem.has_producer_id and version >= 3 and not refused
            response: InitProducerIdResponse = await conn.send(
                InitProducerIdRequest(
                    transactional_id=None,
                    transaction_timeout_ms=60000,
                    producer_id=idem.producer_id if bump else -1,
                    producer_epoch=idem.epoch if bump else -1,
                ),
                version,
            )
            if response.error_code:
                raise error_from_response(
                    response.error_code,
                    message="the broker refused a producer id (InitProducerId)",
                )
        except KafkaError as e:
            if not e.retriable and bump:
                # Bumping our epoch was refused: a producer without a
                # transactional id may simply start over with a new id.
                log.warning("epoch bump refused (%s); asking for a new producer id", e)
                refused = True
                continue
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
