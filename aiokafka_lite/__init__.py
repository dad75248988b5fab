"""aiokafka_lite: an asyncio-native Kafka producer, a drop-in for aiokafka's AIOKafkaProducer."""

from ._internal.batch_builder import BatchBuilder
from ._version import __version__
from .admin import NewTopic, create_topics
from .compat import AiokafkaPatchWarning, patch_aiokafka
from .config import ProducerConfig
from .errors import IllegalOperation, KafkaError, KafkaTimeoutError
from .interceptors import ProducerInterceptor, ProducerRecord
from .producer import AIOKafkaProducer
from .structs import OffsetAndMetadata, RecordMetadata, TopicPartition

__all__ = [
    "AIOKafkaProducer",
    "AiokafkaPatchWarning",
    "BatchBuilder",
    "IllegalOperation",
    "KafkaError",
    "KafkaTimeoutError",
    "NewTopic",
    "OffsetAndMetadata",
    "ProducerConfig",
    "ProducerInterceptor",
    "ProducerRecord",
    "RecordMetadata",
    "TopicPartition",
    "__version__",
    "create_topics",
    "patch_aiokafka",
]
