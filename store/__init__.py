"""cheapqa store: document states at rest (codec, Redis and embedded backends) and the
ingestion queue beside them; `store.factory` opens both from a URL."""
