"""Damaged .warc.zst frames among the records an indexer passes over (requests, metadata): a
truncated frame, a frame whose content size lies, garbage between frames, a record longer or
shorter than its Content-Length, and records that are not one frame of a record and its
newlines (no trailing newlines, several frames, a header block cut between frames, no content
size); each problem is one error naming the file and the offset, and every other record is
indexed."""
import pytest
import zstandard

from helpers import warcs
from webarchive_indexing.cdx.indexer import index_file
from webarchive_indexing.warc import zstdwarc
from webarchive_indexing.warc.raw import open_records
from webarchive_indexing.warc.walk import ArchiveError, iter_records

SKIP = (("request", "warcinfo"), ("application/warc-fields",))


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """The records (bytes) of a small generated crawl file, and a dictionary trained on them."""
    path = warcs(tmp_path_factory.mktemp("damaged"), files=1, captures=40, seed=7)[0]
    with open_records(path) as found:
        data = [b"".join(record.pieces) for record in found]
    return data, zstdwarc.train_dictionary(data, 16 << 10)


def kind(record):
    return record[:400].split(b"WARC-Type: ", 1)[1].split(b"\r\n", 1)[0].decode()


def write(path, records, zdict, frames=None):
    """A .warc.zst of ``frames`` (bytes of frames, a list a record; default: one frame a
    record, as ``recompress`` writes them) after the dictionary frame."""
    compress = zstdwarc.compressor(3, zdict).compress
    frames = frames or [[compress(record)] for record in records]
    with open(path, "wb") as fh:
        fh.write(zstdwarc.dictionary_frame(zdict))
        for pieces in frames:
            fh.writelines(pieces)
    return str(path)


def walked(path, skip=SKIP):
    """What ``iter_records`` yields, then raises, of ``path``, as tuples."""
    items = []
    with open(path, "rb") as fh:
        try:
            items.extend(iter_records(fh, path, skip=skip))
        except ArchiveError as exc:
            items.append(exc)
    return [(type(item).__name__, getattr(item, "offset", None), getattr(item, "length", None),
             getattr(item, "count", None), getattr(item, "reason", None)) for item in items]


def walk_and_index(path):
    return walked(path), index_file(path)


def test_a_good_file(records, tmp_path):
    data, zdict = records
    walk, result = walk_and_index(write(tmp_path / "good.warc.zst", data, zdict))
    skipped = sum(count for name, _, _, count, _ in walk if name == "Skipped")
    assert skipped == sum(kind(r) in ("request", "warcinfo", "metadata") for r in data) > 40
    assert result.errors == [] and len(result.lines) == len(data) - skipped >= 40


def with_content_size(frame, size):
    """The zstd ``frame`` with a header that says its content is ``size`` bytes (an 8-byte
    field, any size), its blocks as they are."""
    descriptor = frame[4]
    single_segment = descriptor >> 5 & 1
    dictionary_id = 5 + (0 if single_segment else 1)
    at = dictionary_id + (0, 1, 2, 4)[descriptor & 3]
    width = (single_segment, 2, 4, 8)[descriptor >> 6]
    # content size in 8 bytes, not single segment: a window descriptor (of 128 KiB) first
    return (frame[:4] + bytes([3 << 6 | descriptor & 0x07, 7 << 3]) + frame[dictionary_id:at]
            + size.to_bytes(8, "little") + frame[at + width:])


def unsized(record, zdict):
    """A frame of ``record`` that does not say its content size."""
    obj = zstandard.ZstdCompressor(level=3, dict_data=zdict, write_checksum=True).compressobj()
    return obj.compress(record) + obj.flush()


def damaged(data, zdict, damage):
    """Frames a record, as written, with ``damage(record, compress, zdict)`` (its frames) done
    to the first request after the fifth record and the first metadata record after the
    record after it (not next to each other: one is not passed over by the recovery from the
    other); their indexes."""
    compress = zstdwarc.compressor(3, zdict).compress
    request = next(i for i, r in enumerate(data) if i > 5 and kind(r) == "request")
    hit = {request, next(i for i, r in enumerate(data) if i > request + 1
                         and kind(r) == "metadata")}
    return [damage(record, compress, zdict) if i in hit else [compress(record)]
            for i, record in enumerate(data)], sorted(hit)


def test_a_frame_header_rewritten_with_its_true_size_still_reads(records, tmp_path):
    data, zdict = records
    frames, hit = damaged(data, zdict, lambda record, compress, zdict: [
        with_content_size(compress(record), len(record))])
    result = index_file(write(tmp_path / "resized.warc.zst", data, zdict, frames))
    good = index_file(write(tmp_path / "good.warc.zst", data, zdict))
    assert result.errors == [] and len(result.lines) == len(good.lines) >= 40


# a frame's content size that lies: a little (decompressed whole), or more than one
# decompression call may give (fed block by block: no 1 TiB of output is ever made)
@pytest.mark.parametrize("lie", [1, -1, 200, 1 << 40])
def test_a_frame_whose_content_size_lies(records, tmp_path, lie):
    data, zdict = records

    def lying(record, compress, zdict):
        return [with_content_size(compress(record), len(record) + lie)]

    frames, hit = damaged(data, zdict, lying)
    path = write(tmp_path / "lying.warc.zst", data, zdict, frames)
    walk, result = walk_and_index(path)
    assert [offset for name, offset, *_ in walk if name == "RecordError"] == \
        [e.offset for e in result.errors] and len(result.errors) == len(hit)
    assert all(str(e).startswith(f"{path}: offset {e.offset}: corrupt zstd frame")
               for e in result.errors), result.errors
    good = index_file(write(tmp_path / "good.warc.zst", data, zdict))
    assert len(result.lines) == len(good.lines)


@pytest.mark.parametrize("damage,reason", [
    (lambda record, compress, zdict: [b"<html>garbage</html>", compress(record)],
     "expected a zstd frame here, found other data"),
    (lambda record, compress, zdict: [compress(record + b"more than it says\r\n")],
     "record is longer than its Content-Length says: 23 more bytes"),
    (lambda record, compress, zdict: [compress(record + record)],
     "zstd frame holds more than one record"),
    (lambda record, compress, zdict: [compress(record[:-40])],
     "record is cut short: its zstd frames end 36 bytes before"),
], ids=["garbage", "longer", "two records", "cut short"])
def test_damaged_records_passed_over(records, tmp_path, damage, reason):
    data, zdict = records
    frames, hit = damaged(data, zdict, damage)
    path = write(tmp_path / "damaged.warc.zst", data, zdict, frames)
    walk, result = walk_and_index(path)
    assert len(result.errors) == len(hit)
    assert all(reason in e.reason and str(e).startswith(f"{path}: offset {e.offset}: ")
               for e in result.errors), result.errors


def header_end(record):
    return record.index(b"\r\n\r\n")


@pytest.mark.parametrize("damage", [
    lambda record, compress, zdict: [compress(record.removesuffix(b"\r\n\r\n"))],
    lambda record, compress, zdict: [compress(record[:30]), compress(record[30:-4]),
                                     compress(record[-4:])],
    lambda record, compress, zdict: [compress(record[:header_end(record) - 5]),
                                     compress(record[header_end(record) - 5:])],
    lambda record, compress, zdict: [unsized(record, zdict)],
], ids=["no trailing newlines", "in three frames", "header block in two frames",
        "without content size"])
def test_records_not_one_frame_of_a_record_and_its_newlines(records, tmp_path, damage):
    data, zdict = records
    frames, hit = damaged(data, zdict, damage)
    path = write(tmp_path / "other.warc.zst", data, zdict, frames)
    walk, result = walk_and_index(path)
    assert result.errors == []
    good = index_file(write(tmp_path / "good.warc.zst", data, zdict))
    assert len(result.lines) == len(good.lines)


def test_a_truncated_frame_among_records_passed_over(records, tmp_path):
    data, zdict = records
    path = write(tmp_path / "good.warc.zst", data, zdict)
    whole = open(path, "rb").read()
    offsets = [offset for name, offset, *_ in walked(path, ((), ())) if name == "Record"]
    request = next(i for i, r in enumerate(data) if i > 5 and kind(r) == "request")
    at = offsets[request]
    good = index_file(path)
    for cut in (1, 4, 6, 12, 30):
        bad = str(tmp_path / "cut.warc.zst")
        with open(bad, "wb") as fh:
            fh.write(whole[:at + cut])
        walk, result = walk_and_index(bad)
        assert [(type(e), e.offset) for e in result.errors] == [(ArchiveError, at)]
        assert str(result.errors[0]).startswith(f"{bad}: offset {at}: zstd frame is truncated: "
                                                "the file ends inside it")
        assert len(result.lines) == sum(1 for line in good.lines if f'"offset": "' in line
                                        and int(line.split('"offset": "')[1].split('"')[0]) < at)
