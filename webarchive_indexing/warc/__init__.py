"""Reading WARC and ARC records: gzip members, .warc.zst frames, plain files, one walk."""
