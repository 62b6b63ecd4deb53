"""The CDX API: a request, its answer over clusters, and serve."""
