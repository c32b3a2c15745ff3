"""Prometheus metrics, one CollectorRegistry per app so tests can build several apps."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
LOOKUP_BUCKETS = (1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.request_seconds = Histogram(
            "cheapqa_request_seconds",
            "HTTP request latency by route template",
            ["method", "route", "status"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.ingest_queue_depth = Gauge(
            "cheapqa_ingest_queue_depth", "Documents waiting in the ingestion queue", registry=r
        )
        self.query_queue_depth = Gauge(
            "cheapqa_query_queue_depth", "Query encodings waiting for the batcher", registry=r
        )
        self.query_batch_size = Histogram(
            "cheapqa_query_batch_size",
            "Queries encoded per batcher run",
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.ingest_batch_size = Histogram(
            "cheapqa_ingest_batch_size",
            "Documents encoded per worker batch",
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.documents_indexed = Counter(
            "cheapqa_documents_indexed", "Documents indexed by this process", registry=r
        )
        self.documents_failed = Counter(
            "cheapqa_documents_failed",
            "Documents that failed indexing and went to the dead letters",
            registry=r,
        )
        self.readings_skipped = Counter(
            "cheapqa_readings_skipped",
            "Requests answered without the pair reader because too many waited for it",
            registry=r,
        )
        self.lookup_seconds = Histogram(
            "cheapqa_lookup_seconds",
            "Lookup plus scoring time for one document's queries, by mode",
            ["mode"],
            buckets=LOOKUP_BUCKETS,
            registry=r,
        )
        self.encode_seconds = Histogram(
            "cheapqa_encode_seconds",
            "Document encoding time per worker batch and mode",
            ["mode"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
