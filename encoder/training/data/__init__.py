"""Data: real text sources, entity-cloze question building, the JSONL format."""
