"""The read side: loaders for committed datasets, PyTorch access, the curated-dataset adapter."""
