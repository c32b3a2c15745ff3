"""One router per concern: documents, answers, health and metrics."""
