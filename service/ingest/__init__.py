"""Ingestion: the worker loop that reads the queue (store/queue/) and writes the states."""
