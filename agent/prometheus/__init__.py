"""The Prometheus HTTP API adapter: one instant query, answered as raw JSON.

Why an adapter of its own: the descheduler reads node usage from a Prometheus query
(``metricsUtilization.source: Prometheus``) as upstream's descheduler does, and every byte
of I/O lives in an adapter. It has its own error hierarchy (``errors``), the pure decoding
of an answer (``answer``) and the client (``client``: urllib3, which the official
Kubernetes client already brings, TLS options, a bounded response, timeouts and the one
retry policy).
"""
