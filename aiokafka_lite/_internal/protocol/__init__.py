"""The Kafka wire protocol: messages declared as data, one generic codec, framing.

Each message class transcribes one of Apache Kafka's JSON message schemas: field
order, wire types, version ranges, nullable versions and tags are copied from the
schema (``tests/test_protocol_schemas.py`` checks every declaration against the JSON
files). Field names are the schema's names in snake_case. Every field has a default so
that fields absent from a version decode to their schema default.

The declarations live by API family (each module names its API keys):

* :mod:`.handshake`: ApiVersions, SaslHandshake, SaslAuthenticate
* :mod:`.metadata`: Metadata, FindCoordinator
* :mod:`.produce`: Produce
* :mod:`.transactions`: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
  TxnOffsetCommit
* :mod:`.admin`: CreateTopics, OffsetFetch

:mod:`.codec` encodes and decodes any of them; :mod:`.frames` builds the request and
response frames around them.
"""

# The message classes are this package's surface, as well as their modules'.
from .admin import *  # noqa: F403
from .codec import DecodeError, Message, Request, Response, decode, encode
from .handshake import *  # noqa: F403
from .metadata import *  # noqa: F403
from .produce import *  # noqa: F403
from .transactions import *  # noqa: F403

__all__ = ["DecodeError", "Message", "Request", "Response", "decode", "encode"]
