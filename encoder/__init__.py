"""cheapqa encoder: the reader model, text handling, and training, in three rooms by where
the code runs.

    model/     the reader, its attention modes, states, checkpoints, vocabulary (serving
               and training both use it)
    text/      tokens, the entity finder, anonymisation, plain questions (serving and
               training both use it)
    training/  recipes, batches, training, evaluation, the data builder (never imported by
               model/ or text/, so the service never loads it)
    checkpoints/  the shipped readers (<mode>.pt and index.json)

Pure PyTorch: knows nothing of HTTP or Redis.
"""
