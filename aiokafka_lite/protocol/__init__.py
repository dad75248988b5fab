"""The Kafka wire protocol: messages declared as data, one generic codec, framing."""

from .codec import DecodeError, Message, Request, Response, decode, encode
from .messages import *  # noqa: F403 - the message classes are this package's surface

__all__ = ["DecodeError", "Message", "Request", "Response", "decode", "encode"]
