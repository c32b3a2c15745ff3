"""Ingestion: the queue between the API and the workers, and the worker loop."""
