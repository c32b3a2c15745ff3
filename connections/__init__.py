"""Connections the store and the ingestion queue share: the Redis client (plain or Cluster)
and the SQLite write transaction. Knows nothing of documents, queues or HTTP."""
