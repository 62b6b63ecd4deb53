"""How an archive file starts: the first bytes that tell which reader reads it.

    compression(fh.peek(4)[:4])   # "gz", "zst", "zip" (a WACZ), or None (uncompressed, or
                                  # not an archive)
"""
GZIP_MAGIC = b"\x1f\x8b"
# A .warc.zst (IIPC warc-zstd) starts with a zstd frame, or with a dictionary frame (a
# skippable frame with the magic 0x184D2A5D), or another skippable frame (magic 0x184D2A50
# to 0x184D2A5F), which zstd readers pass over
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
DICT_FRAME_MAGIC = b"\x5d\x2a\x4d\x18"
SKIPPABLE_MAGICS = tuple(bytes([0x50 + i]) + b"\x2a\x4d\x18" for i in range(16))
# A ZIP file (a WACZ) starts with the local header of its first entry
ZIP_MAGIC = b"PK\x03\x04"
# An uncompressed WARC file starts with a record, an ARC file with its header record
PLAIN_STARTS = (b"WARC/", b"filedesc://")
# Everything an archive may start with
ARCHIVE_STARTS = (GZIP_MAGIC, ZSTD_MAGIC, *SKIPPABLE_MAGICS, *PLAIN_STARTS, ZIP_MAGIC)


def compression(head):
    """How a file whose first bytes (4 at least, if it has them) are ``head`` is compressed:
    "gz", "zst", "zip", or None."""
    if head[:2] == GZIP_MAGIC:
        return "gz"
    if head[:4] == ZSTD_MAGIC or head[:4] in SKIPPABLE_MAGICS:
        return "zst"
    if head[:4] == ZIP_MAGIC:
        return "zip"
    return None
