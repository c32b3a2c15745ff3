"""Hand-written news stories and their questions, asked through the service (`python -m
bench.realistic`)."""
