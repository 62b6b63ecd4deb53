"""What the user's inputs are: archives and manifests found, existing indexes read."""
