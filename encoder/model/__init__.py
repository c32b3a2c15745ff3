"""The reader: configuration, attention modes, document states, the model, checkpoints
and vocabulary."""
