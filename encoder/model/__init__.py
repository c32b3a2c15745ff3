"""The reader: configuration, attention modes, document states, the model, its serving
object, checkpoints and vocabulary."""
