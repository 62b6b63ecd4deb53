"""The ZipNum cluster format: shards, blocks and index lines written, clusters read."""
