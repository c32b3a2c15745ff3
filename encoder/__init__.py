"""cheapqa encoder: the reader model, its attention modes, text handling, data, training.

Pure PyTorch: knows nothing of HTTP or Redis.
"""
