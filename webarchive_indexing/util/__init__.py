"""Foundations that import nothing of the package: retries, progress, process pools, errors."""
