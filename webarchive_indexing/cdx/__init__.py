"""CDX lines: their model, the indexer that makes them from records, URL keys, meta and samples."""
