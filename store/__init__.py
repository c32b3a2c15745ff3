"""cheapqa store: document states at rest (codec, Redis backend, embedded backend)."""
