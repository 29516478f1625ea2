"""Where a run's artifact goes when it is not a local folder: object stores (s3://, gs://, az://)."""
