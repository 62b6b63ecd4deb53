"""One module per command that is more than a call: build, copy, export, recompress..."""
