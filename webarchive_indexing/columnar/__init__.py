"""Common Crawl's columnar table: its schema, and Parquet files written from sorted CDX lines."""
