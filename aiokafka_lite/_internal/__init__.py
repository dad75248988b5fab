"""The producer's implementation: nothing here is API.

What users import is re-exported from :mod:`aiokafka_lite` and its public modules
(``errors``, ``sync``, ``embedded``, ``security``, ``oauth``, ``msk``, ``otel``,
``serializers``, ``partitioner``, ``config``, ``structs``, ``interceptors``, ``admin``,
``speedups``, ``metrics``) and packages (``spark``, ``testing``, ``cli``).
The modules here, and their names, may change in any release.
"""
