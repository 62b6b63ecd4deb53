"""Tests of the SequenceFile<Text, NullWritable> writer, checked against Hadoop's own reader via pyspark."""

import io
import random
import struct

import pytest

from webarchive_indexing.build.seqfile import (DEFAULT_SYNC_MARKER, SYNC_ESCAPE, decode_vint,
                                               encode_vint, read_text_keys, write_text_keys)

HEADER = (b"SEQ\x06"
          b"\x19org.apache.hadoop.io.Text"
          b"\x21org.apache.hadoop.io.NullWritable"
          b"\x00\x00"            # neither compressed nor block-compressed
          b"\x00\x00\x00\x00")   # no metadata
SYNC = SYNC_ESCAPE + DEFAULT_SYNC_MARKER
# WritableUtils.writeVInt output for these values, worked out by hand from Hadoop's source
VINTS = {0: "00", 1: "01", 127: "7f", 128: "8f80", 255: "8fff", 256: "8e0100", 70000: "8d011170",
         -1: "ff", -112: "90", -113: "8770", 2**31 - 1: "8c7fffffff", -2**31: "847fffffff"}
TEXT_LENGTHS = [0, 1, 127, 128, 255, 256, 70000]


def sample_keys():
    """CDX-like keys: ASCII, non-ASCII, ~3000 bytes long, empty, in random order."""
    rng = random.Random(6)
    keys = [f"com,example,www)/page/{i} 20240101{i % 240000:06d} {{\"status\": \"200\"}}" for i in range(3000)]
    keys += ["", "fr,café)/crème 20240101000000", "jp,例え)/パス 20240101000000",
             "com,emoji)/\U0001f600 20240101000000", "\U0010ffff0001", "tab\tand\x1cseparators\u2028"]
    keys += ["org,long)/" + "x" * (2990 + i) for i in range(20)]
    keys += ["org,long)/" + "é" * 1500]
    rng.shuffle(keys)
    return keys


def written(keys, **kwargs):
    buf = io.BytesIO()
    assert write_text_keys(buf, keys, **kwargs) == len(keys)
    return buf.getvalue()


def sync_offsets(data):
    """Offsets just past each sync escape in ``data``."""
    offsets, pos = [], data.find(SYNC, len(HEADER) + 16)
    while pos != -1:
        offsets.append(pos + len(SYNC))
        pos = data.find(SYNC, pos + 1)
    return offsets


@pytest.mark.parametrize("value, encoded", VINTS.items())
def test_vint_matches_hadoop(value, encoded):
    assert encode_vint(value).hex() == encoded
    assert decode_vint(bytes.fromhex("aa" + encoded), 1) == (value, 1 + len(encoded) // 2)


def test_vint_round_trips_all_sizes():
    for bits in range(64):
        for value in (2**bits - 1, 2**bits, -2**bits, -2**bits - 1):
            if -2**63 <= value < 2**63:
                assert decode_vint(encode_vint(value), 0) == (value, len(encode_vint(value)))


def test_truncated_vint():
    with pytest.raises(ValueError, match="offset 0: truncated vint"):
        decode_vint(bytes.fromhex("8d0111"), 0)


def test_header_and_record_bytes():
    assert DEFAULT_SYNC_MARKER.hex() == "f02396a5f239e0cb0f0a82a20f480d15"  # changing it changes every file
    assert written([]) == HEADER + DEFAULT_SYNC_MARKER
    assert written(["a", b"bc"]) == (HEADER + DEFAULT_SYNC_MARKER
                                     + bytes.fromhex("00000002 00000002 01") + b"a"
                                     + bytes.fromhex("00000003 00000003 02") + b"bc")


@pytest.mark.parametrize("length", TEXT_LENGTHS)
def test_key_length_prefix(length):
    key = "k" * length
    data = written([key])
    text = encode_vint(length) + key.encode()
    assert data[len(HEADER) + 16:] == struct.pack(">ii", len(text), len(text)) + text
    assert read_text_keys(io.BytesIO(data)) == [key]


def test_round_trip_with_our_reader():
    keys = sample_keys()
    assert read_text_keys(io.BytesIO(written(keys))) == keys


def test_bytes_keys_are_written_as_is():
    assert read_text_keys(io.BytesIO(written(["é".encode(), b"plain"]))) == ["é", "plain"]


def test_byte_reproducible():
    keys = sample_keys()
    assert written(keys) == written(list(keys))
    marker = bytes(range(16))
    other = written(keys, sync_marker=marker)
    assert other != written(keys)
    assert other.replace(marker, DEFAULT_SYNC_MARKER) == written(keys)
    assert read_text_keys(io.BytesIO(other)) == keys


def test_sync_markers_follow_hadoops_rule():
    keys = sample_keys()
    data = written(keys)
    offsets = sync_offsets(data)
    assert len(offsets) >= 20
    longest_record = max(8 + len(encode_vint(len(k.encode()))) + len(k.encode()) for k in keys)
    previous = 0  # Hadoop counts the first interval from the start of the file
    for offset in offsets:
        # a sync comes before the first record starting at least 2000 bytes after the last
        assert 2000 + len(SYNC) <= offset - previous < 2000 + len(SYNC) + longest_record
        previous = offset
    assert len(data) - previous < 2000 + longest_record


def test_sync_interval_is_configurable():
    keys = [f"key{i:04d}" for i in range(1000)]
    assert len(sync_offsets(written(keys, sync_interval=100))) > 5 * len(sync_offsets(written(keys)))


def test_bad_sync_marker_length():
    with pytest.raises(ValueError, match="16 bytes"):
        written(["a"], sync_marker=b"short")


def test_every_truncation_is_detected():
    keys = ["a", "", "bb" * 40, "é" * 50, "c" * 200, "d"]
    data = written(keys, sync_interval=100)
    assert sync_offsets(data), "the file should contain sync escapes"
    # a file cut at the end of a record or of a sync escape is valid, just shorter
    complete = {len(written(keys[:n], sync_interval=100)): n for n in range(len(keys) + 1)}
    complete.update({offset: complete[offset - len(SYNC)] for offset in sync_offsets(data)})
    for cut in range(len(data)):
        if cut in complete:
            assert read_text_keys(io.BytesIO(data[:cut])) == keys[:complete[cut]]
        else:
            with pytest.raises(ValueError, match=r"offset \d+: .*"):
                read_text_keys(io.BytesIO(data[:cut]))


@pytest.mark.parametrize("damage, message", [
    (lambda d: b"XYZ" + d[3:], "offset 0: not a SequenceFile"),
    (lambda d: d[:3] + b"\x05" + d[4:], "offset 3: unsupported SequenceFile version"),
    (lambda d: d.replace(b"\x19org.apache.hadoop.io.Text", b"\x19org.apache.hadoop.io.Tex!"),
     "offset 4: key class is 'org.apache.hadoop.io.Tex!'"),
    (lambda d: d.replace(b"NullWritable", b"LongWritable"), "offset 30: value class"),
    (lambda d: d[:64] + b"\x01" + d[65:], "offset 64: compressed"),
    (lambda d: d[:-11] + b"\x00\x00\x00\x03\x00\x00\x00\x02\x01q\x00", "offset 96: record has 1 value bytes"),
    (lambda d: d[:-11] + b"\x00\x00\x00\x02\x00\x00\x00\x02\x02q", "offset 104: key length 2 runs past"),
    (lambda d: d[:-11] + SYNC_ESCAPE + bytes(16), "offset 100: sync marker does not match"),
    (lambda d: d[:-2] + b"\xff\xfe", "offset 105: key is not valid UTF-8"),
])
def test_damaged_files(damage, message):
    data = written(["a", "bc"])
    assert len(data) == 107 and damage(data) != data
    with pytest.raises(ValueError, match=message):
        read_text_keys(io.BytesIO(damage(data)))


# --- Hadoop's own reader, through pyspark -------------------------------------------



def hadoop_read(sc, path, min_splits=None):
    rdd = sc.sequenceFile(str(path), minSplits=min_splits)
    records = rdd.collect()
    assert all(value is None for _, value in records)
    return [key for key, _ in records]


def test_hadoop_reads_our_file(spark, tmp_path):
    keys = sample_keys()
    path = tmp_path / "keys.seq"
    path.write_bytes(written(keys))
    assert hadoop_read(spark, path) == keys


def test_hadoop_splits_our_file_at_sync_markers(spark, tmp_path):
    keys = sample_keys()
    path = tmp_path / "keys.seq"
    path.write_bytes(written(keys))
    # SequenceFileInputFormat makes no split smaller than Hadoop's own sync interval
    # (100 KiB nowadays), so this needs a file of a few hundred KB
    assert path.stat().st_size > 2 * 100 * 1024
    parts = spark.sequenceFile(str(path), minSplits=4).keys().glom().collect()
    # a split other than the first starts reading at the first sync marker in it:
    # without (findable) markers those splits would come back empty
    assert len(parts) > 1 and all(parts)
    assert [key for part in parts for key in part] == keys


def test_hadoop_reads_vint_lengths_and_empty_file(spark, tmp_path):
    keys = ["é" * (n // 2) + "k" * (n % 2) for n in TEXT_LENGTHS]
    (tmp_path / "lengths.seq").write_bytes(written(keys))
    (tmp_path / "empty.seq").write_bytes(written([]))
    assert [len(k.encode()) for k in hadoop_read(spark, tmp_path / "lengths.seq")] == TEXT_LENGTHS
    assert hadoop_read(spark, tmp_path / "lengths.seq") == keys
    assert hadoop_read(spark, tmp_path / "empty.seq") == []
