"""The write side: output spec, encoders, containers, the shard writer and the commit protocol."""
