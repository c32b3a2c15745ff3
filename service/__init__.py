"""cheapqa service: the HTTP API, the ingestion queue and worker, batching, settings, CLI."""
