"""Training a reader: recipes, batches, the training loop, warm starts, prediction,
evaluation, GloVe embeddings, and the data builder (data/)."""
