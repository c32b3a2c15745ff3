"""The ingestion queue: what the API puts documents on and the worker reads them from."""
