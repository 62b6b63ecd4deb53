"""A small writer and reader for Hadoop SequenceFile<Text, NullWritable>.

Hadoop's ``TotalOrderPartitioner`` reads its split points from such a file (the keys
are the split lines, the values are empty), and no maintained Python package writes
one.  Only what that needs is supported: version 6, uncompressed, no metadata.

Layout (all integers big-endian)::

    header  b"SEQ" 0x06, Text "org.apache.hadoop.io.Text",
            Text "org.apache.hadoop.io.NullWritable", compressed = 0,
            block-compressed = 0, int32 metadata count = 0, 16-byte sync marker
    record  int32 record length, int32 key length, key (Text: vint length + UTF-8)
    sync    int32 -1 + the 16-byte marker, written by the rules of Hadoop's writer

Usage::

    from webarchive_indexing.build import seqfile

    with open("splits.seq", "wb") as f:
        seqfile.write_text_keys(f, ["com,example)/ 20240101000000", "org,example)/ 2024"])
    with open("splits.seq", "rb") as f:
        assert seqfile.read_text_keys(f) == ["com,example)/ 20240101000000", "org,example)/ 2024"]
"""

import hashlib
import struct

MAGIC = b"SEQ"
VERSION = 6
KEY_CLASS = "org.apache.hadoop.io.Text"
VALUE_CLASS = "org.apache.hadoop.io.NullWritable"
SYNC_SIZE = 16
SYNC_ESCAPE = struct.pack(">i", -1)

# Hadoop draws a fresh marker per file (md5 of a UID and the time) so that markers of
# different files differ.  A reader only ever compares against the marker in the same
# file's header, so a fixed marker reads identically, and it makes the same keys give a
# byte-identical file: rebuilds can be compared by checksum and jobs stay reproducible.
DEFAULT_SYNC_MARKER = hashlib.md5(b"webarchive_indexing.seqfile sync marker").digest()


def encode_vint(value: int) -> bytes:
    """Encode ``value`` as Hadoop's ``WritableUtils.writeVLong`` does (``writeVInt`` too).

    -112..127 take one byte; otherwise a first byte tells sign and length (-113..-120:
    positive with 1..8 bytes following, -121..-128: negative, stored as its complement),
    followed by the big-endian magnitude without leading zero bytes.
    """
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    marker = -112
    if value < 0:
        value = ~value
        marker = -120
    size = (value.bit_length() + 7) // 8
    return struct.pack(">b", marker - size) + value.to_bytes(size, "big")


def decode_vint(data: bytes, pos: int) -> tuple[int, int]:
    """Decode a Hadoop vint/vlong at ``data[pos]``; return ``(value, position after it)``."""
    if pos >= len(data):
        raise ValueError(f"offset {pos}: truncated vint (end of data)")
    first = struct.unpack_from(">b", data, pos)[0]
    if first >= -112:
        return first, pos + 1
    negative = first < -120
    size = (-120 - first) if negative else (-112 - first)
    end = pos + 1 + size
    if end > len(data):
        raise ValueError(f"offset {pos}: truncated vint (needs {size} more bytes)")
    value = int.from_bytes(data[pos + 1:end], "big")
    return (~value if negative else value), end


def _text(value: str | bytes) -> bytes:
    """Serialise a Hadoop ``Text``: vint byte length, then the UTF-8 bytes."""
    data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    return encode_vint(len(data)) + data


def _header(sync_marker: bytes) -> bytes:
    return (MAGIC + bytes([VERSION]) + _text(KEY_CLASS) + _text(VALUE_CLASS)
            + b"\x00\x00"                 # not compressed, not block-compressed
            + struct.pack(">i", 0)        # no metadata
            + sync_marker)


def write_text_keys(fileobj, keys, sync_marker: bytes | None = None, sync_interval: int = 2000) -> int:
    """Write ``keys`` (str, encoded as UTF-8, or bytes) as a SequenceFile<Text, NullWritable>.

    ``fileobj`` only needs ``write`` (an HDFS or S3 stream will do): positions are
    counted here rather than asked of the file.  A sync escape precedes a record when at
    least ``sync_interval`` bytes were written since the last one, counted from the
    start of the file as Hadoop's ``SequenceFile.Writer`` does; split readers seek to
    these.  ``sync_marker`` defaults to :data:`DEFAULT_SYNC_MARKER` (fixed, see there).
    Returns the number of keys written.
    """
    marker = DEFAULT_SYNC_MARKER if sync_marker is None else bytes(sync_marker)
    if len(marker) != SYNC_SIZE:
        raise ValueError(f"sync marker must be {SYNC_SIZE} bytes, got {len(marker)}")
    header = _header(marker)
    fileobj.write(header)
    pos, last_sync, count = len(header), 0, 0
    for key in keys:
        if pos >= last_sync + sync_interval:
            fileobj.write(SYNC_ESCAPE + marker)
            pos += len(SYNC_ESCAPE) + SYNC_SIZE
            last_sync = pos
        text = _text(key)
        # record length = key length + value length, and a NullWritable value has no bytes
        record = struct.pack(">ii", len(text), len(text)) + text
        fileobj.write(record)
        pos += len(record)
        count += 1
    return count


def _int32(data: bytes, pos: int, what: str) -> int:
    if pos + 4 > len(data):
        raise ValueError(f"offset {pos}: truncated {what} ({len(data) - pos} of 4 bytes)")
    return struct.unpack_from(">i", data, pos)[0]


def _read_text(data: bytes, pos: int, end: int, what: str) -> tuple[str, int]:
    """Read a Text starting at ``pos`` that must not reach past ``end``."""
    length, start = decode_vint(data, pos)
    if length < 0 or start + length > end:
        raise ValueError(f"offset {pos}: {what} length {length} runs past offset {end}")
    try:
        return data[start:start + length].decode("utf-8"), start + length
    except UnicodeDecodeError as err:
        raise ValueError(f"offset {start}: {what} is not valid UTF-8 ({err.reason})") from None


def _parse_header(data: bytes) -> tuple[bytes, int]:
    """Check the header; return ``(sync marker, offset of the first record)``."""
    if data[:3] != MAGIC:
        raise ValueError(f"offset 0: not a SequenceFile (starts with {data[:3]!r}, not {MAGIC!r})")
    if len(data) < 4 or data[3] != VERSION:
        raise ValueError(f"offset 3: unsupported SequenceFile version {data[3:4]!r}, expected {VERSION}")
    pos = 4
    for expected, what in ((KEY_CLASS, "key class"), (VALUE_CLASS, "value class")):
        found, next_pos = _read_text(data, pos, len(data), what)
        if found != expected:
            raise ValueError(f"offset {pos}: {what} is {found!r}, expected {expected!r}")
        pos = next_pos
    if len(data) < pos + 2:
        raise ValueError(f"offset {pos}: truncated header (compression flags missing)")
    if data[pos:pos + 2] != b"\x00\x00":
        raise ValueError(f"offset {pos}: compressed SequenceFiles are not supported "
                         f"(flags {data[pos:pos + 2]!r})")
    pos += 2
    pairs = _int32(data, pos, "metadata count")
    pos += 4
    for _ in range(2 * pairs):  # metadata is Text name/value pairs: skipped
        pos = _read_text(data, pos, len(data), "metadata")[1]
    marker = data[pos:pos + SYNC_SIZE]
    if len(marker) != SYNC_SIZE:
        raise ValueError(f"offset {pos}: truncated header sync marker ({len(marker)} of {SYNC_SIZE} bytes)")
    return marker, pos + SYNC_SIZE


def read_text_keys(fileobj) -> list[str]:
    """Read all keys of a SequenceFile<Text, NullWritable> (as :func:`write_text_keys` writes).

    Meant for validating small files in tooling: it reads the whole file into memory.
    Raises ``ValueError`` naming the offset and the problem on a bad header, a truncated
    record, a wrong sync marker or value bytes where NullWritable has none.
    """
    data = fileobj.read()
    marker, pos = _parse_header(data)
    keys = []
    while pos < len(data):
        record_length = _int32(data, pos, "record length")
        if record_length == -1:
            found = data[pos + 4:pos + 4 + SYNC_SIZE]
            if found != marker:
                problem = "truncated" if len(found) < SYNC_SIZE else "does not match the header's"
                raise ValueError(f"offset {pos + 4}: sync marker {problem}")
            pos += 4 + SYNC_SIZE
            continue
        key_length = _int32(data, pos + 4, "key length")
        if not 0 < key_length <= record_length:
            raise ValueError(f"offset {pos}: bad record (record length {record_length}, key length {key_length})")
        if key_length != record_length:
            raise ValueError(f"offset {pos}: record has {record_length - key_length} value bytes, "
                             f"a NullWritable has none")
        end = pos + 8 + key_length
        if end > len(data):
            raise ValueError(f"offset {pos}: truncated record ({len(data) - pos - 8} of {key_length} key bytes)")
        key, key_end = _read_text(data, pos + 8, end, "key")
        if key_end != end:
            raise ValueError(f"offset {pos}: key length {key_length} but its Text takes {key_end - pos - 8} bytes")
        keys.append(key)
        pos = end
    return keys
