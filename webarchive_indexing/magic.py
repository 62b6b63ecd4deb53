"""How an archive file starts: the first bytes that tell which reader reads it.

    compression(fh.peek(4)[:4])   # "gz", "zst", or None (uncompressed, or not an archive)
"""
GZIP_MAGIC = b"\x1f\x8b"
# A .warc.zst (IIPC warc-zstd) starts with a zstd frame, or with a dictionary frame (a
# skippable frame with the magic 0x184D2A5D)
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
DICT_FRAME_MAGIC = b"\x5d\x2a\x4d\x18"
# An uncompressed WARC file starts with a record, an ARC file with its header record
PLAIN_STARTS = (b"WARC/", b"filedesc://")
# Everything an archive may start with
ARCHIVE_STARTS = (GZIP_MAGIC, ZSTD_MAGIC, DICT_FRAME_MAGIC, *PLAIN_STARTS)


def compression(head):
    """How a file whose first bytes (4 at least, if it has them) are ``head`` is compressed:
    "gz", "zst", or None."""
    if head[:2] == GZIP_MAGIC:
        return "gz"
    if head[:4] in (ZSTD_MAGIC, DICT_FRAME_MAGIC):
        return "zst"
    return None
