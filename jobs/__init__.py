"""The MRJob jobs of the indexing pipeline, one per module; the work is in ``webarchive_indexing``."""
