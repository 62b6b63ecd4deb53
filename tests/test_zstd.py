"""Reading .warc.zst (IIPC warc-zstd 1.0): indexes equal those of the .warc.gz the records came
from (offset, length and filename aside), checked against the real readers and writers: the
`zstd` command line tool, FastWARC 2.0's ZstdReader and its `fastwarc recompress -c zstd`;
every (offset, length) decodes alone to one record; bad input gets the errors gzip gets."""
import base64
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest
import zstandard
from fastwarc.stream_io import ZstdReader
from fastwarc.warc import ArchiveIterator as FastArchiveIterator
from warcio.archiveiterator import ArchiveIterator

from helpers import REAL, fields_but_place, line_offset, resumed_at, uncompressed, warcs
from webarchive_indexing import cli
from webarchive_indexing.warc import members, zstdwarc
from webarchive_indexing.cdx.indexer import index_file
from webarchive_indexing.inputs.discovery import cdx_name
from webarchive_indexing.commands.build import build
from webarchive_indexing.options import BuildOptions, ZstdDictOptions
from webarchive_indexing.warc.raw import open_records, read_record
from webarchive_indexing.warc.walk import ArchiveError, RecordError, iter_records
from webarchive_indexing.warc.base import READ_SIZE
from webarchive_indexing.commands.recompress import recompress_file
from webarchive_indexing.commands.zstd_dict import train

# The real samples that are WARC files (ARC files have no .warc.zst) and read whole
BROKEN = ("clipped.warc.gz", "example-bad-non-chunked.warc.gz", "example-trunc.warc",
          "link-extraction-test.warc")
# FastWARC's command line, installed with it (the test extra)
FASTWARC = os.path.join(os.path.dirname(sys.executable), "fastwarc")
WARC_SAMPLES = sorted(n for n in os.listdir(REAL) if ".warc" in n and not n.endswith(BROKEN))


def raw_records(path):
    with open_records(path) as records:
        return [b"".join(record.pieces) for record in records]


def write_zst(path, records, zdict=None, frames=lambda i, record: [record], extra=lambda i: b"",
              dictionary_frame=True):
    """A .warc.zst of ``records`` (bytes): record i as the frames of the pieces
    ``frames(i, record)``, after ``extra(i)`` (e.g. a skippable frame)."""
    compress = zstdwarc.compressor(3, zdict).compress
    with open(path, "wb") as fh:
        if zdict is not None and dictionary_frame:
            fh.write(zstdwarc.dictionary_frame(zdict))
        for i, record in enumerate(records):
            fh.write(extra(i))
            for piece in frames(i, record):
                fh.write(compress(piece))
    return str(path)


def ranges(path, **kwargs):
    with open(path, "rb") as fh:
        return [(r.offset, r.length) for r in iter_records(fh, path, **kwargs)
                if not isinstance(r, RecordError)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Two generated crawl files, a dictionary trained on them, and their .warc.zst with it."""
    root = tmp_path_factory.mktemp("zcorpus")
    paths = warcs(root / "gz", files=2, captures=150, seed=31)
    dictionary = str(root / "crawl.dict")
    train([str(root / "gz")], dictionary, ZstdDictOptions(size=64 << 10))
    zst = []
    for path in paths:
        target = str(root / "zst" / os.path.basename(path).replace(".warc.gz", ".warc.zst"))
        status = recompress_file(path, target, target + ".cdxj", os.path.basename(target), "zst",
                                 8, dictionary)
        assert status["errors"] == []
        zst.append(target)
    return {"gz": paths, "zst": zst, "dict": dictionary, "root": root}


# -- the same lines as from gzip -----------------------------------------------------------------

@pytest.mark.parametrize("name", WARC_SAMPLES)
def test_real_samples_index_like_their_gzip(name, tmp_path):
    source = os.path.join(REAL, name)
    target = str(tmp_path / "x.warc.zst")
    assert recompress_file(source, target, target + ".cdxj", "x.warc.zst", "zst", 3)["errors"] == []
    ours, theirs = index_file(target), index_file(source)
    assert ours.errors == [] and ours.records == theirs.records
    assert fields_but_place(ours.lines) == fields_but_place(theirs.lines)
    assert subprocess.run(["zstd", "-dc", target], capture_output=True, check=True).stdout == uncompressed(source)


def test_corpus_with_a_dictionary_indexes_like_gzip(corpus):
    total = 0
    for gz, zst in zip(corpus["gz"], corpus["zst"]):
        ours, theirs = index_file(zst), index_file(gz)
        assert ours.errors == [] and ours.records == theirs.records
        assert fields_but_place(ours.lines) == fields_but_place(theirs.lines)
        total += len(ours.lines)
    assert total > 250


def test_zstd_tool_needs_the_dictionary_and_gives_back_the_original_bytes(corpus):
    for gz, zst in zip(corpus["gz"], corpus["zst"]):
        without = subprocess.run(["zstd", "-dc", zst], capture_output=True)
        assert without.returncode != 0 and b"Dictionary mismatch" in without.stderr
        decoded = subprocess.run(["zstd", "-dc", "-D", corpus["dict"], zst], capture_output=True,
                                 check=True).stdout
        assert decoded == uncompressed(gz)


def test_every_index_line_decodes_alone_to_its_record(corpus):
    for gz, zst in zip(corpus["gz"], corpus["zst"]):
        originals = {hashlib.sha1(r).digest() for r in raw_records(gz)}
        found = 0
        for line in index_file(zst).lines:
            data = json.loads(line.split(" ", 2)[2])
            record = read_record(zst, int(data["offset"]), int(data["length"]))
            assert record.startswith(b"WARC/1.") and hashlib.sha1(record).digest() in originals
            found += 1
        assert found > 100


def test_every_record_range_decodes_alone(corpus):
    """Not only the indexed records: every range the walker reports, requests and metadata too."""
    zst = corpus["zst"][0]
    records = raw_records(corpus["gz"][0])
    got = [read_record(zst, offset, length) for offset, length in ranges(zst)]
    assert got == records


# -- an independent reader and writer: FastWARC 2.0 ------------------------------------------

def _digests(records):
    return [(r.headers["WARC-Record-ID"], hashlib.sha1(r.reader.read()).hexdigest()) for r in records]


def _warcio_digests(path):
    with open(path, "rb") as fh:
        return [(r.rec_headers.get_header("WARC-Record-ID"), hashlib.sha1(r.raw_stream.read()).hexdigest())
                for r in ArchiveIterator(fh, no_record_parse=True)]


def test_fastwarc_reads_every_record_of_ours(corpus, tmp_path):
    samples = [os.path.join(REAL, n) for n in WARC_SAMPLES]
    plain_zst = []
    for i, source in enumerate(samples):
        target = str(tmp_path / f"{i}.warc.zst")
        recompress_file(source, target, target + ".cdxj", "x", "zst", 3)
        plain_zst.append((source, target))
    for source, target in [*zip(corpus["gz"], corpus["zst"]), *plain_zst]:
        theirs = _digests(FastArchiveIterator(ZstdReader(target), parse_http=False))
        assert theirs == _warcio_digests(source) and theirs


def test_we_read_what_fastwarc_writes(corpus, tmp_path):
    for gz in [*corpus["gz"], os.path.join(REAL, "chatnoir-eu+chatnoir-resiliparse__warcfile.warc.gz")]:
        target = str(tmp_path / "fast.warc.zst")
        subprocess.run([FASTWARC, "recompress", "-q", "-c", "zstd", gz, target], check=True)
        ours, theirs = index_file(target), index_file(gz)
        assert ours.errors == [] and ours.records == theirs.records
        assert fields_but_place(ours.lines) == fields_but_place(theirs.lines)


# -- frames: records in several, skippable and empty frames ------------------------------------

def test_records_in_several_frames_and_frames_between_them(corpus, tmp_path):
    records = raw_records(corpus["gz"][0])
    zdict = zstdwarc.load_dictionary(corpus["dict"])
    skippable = b"\x57\x2a\x4d\x18" + (5).to_bytes(4, "little") + b"skip!"

    def frames(i, record):
        if i % 3 == 0:  # cut in three, the trailing newlines apart
            third = len(record) // 3
            return [record[:third], record[third:-4], record[-4:]]
        return [record, b""] if i % 3 == 1 else [record]  # an empty frame after it

    path = write_zst(tmp_path / "frames.warc.zst", records, zdict, frames,
                     lambda i: skippable if i % 4 == 0 else b"")
    result = index_file(path)
    assert result.errors == [] and result.records == len(records)
    assert fields_but_place(result.lines) == fields_but_place(index_file(corpus["gz"][0]).lines)
    got = [read_record(path, offset, length) for offset, length in ranges(path)]
    assert got == records


def test_a_dictionary_kept_apart(corpus, tmp_path, capsys, monkeypatch):
    records = raw_records(corpus["gz"][0])
    path = write_zst(tmp_path / "apart.warc.zst", records, zstdwarc.load_dictionary(corpus["dict"]),
                     dictionary_frame=False)
    result = index_file(path)
    dict_id = zstdwarc.load_dictionary(corpus["dict"]).dict_id()
    assert result.lines == [] and [(e.offset, e.reason) for e in result.errors] == [
        (0, f"zstd frame needs dictionary {dict_id} and the file has no dictionary frame: "
            "give the dictionary with --zstd-dictionary FILE (or the frame is corrupt)")]
    given = index_file(path, zstd_dictionary=corpus["dict"])
    assert given.errors == [] and fields_but_place(given.lines) == fields_but_place(index_file(corpus["gz"][0]).lines)
    assert read_record(path, *ranges(path, zstd_dictionary=corpus["dict"])[3],
                                dictionary_file=corpus["dict"]) == records[3]
    # the command line, with a relative path
    monkeypatch.chdir(tmp_path)
    shutil.copy(corpus["dict"], "crawl.dict")
    assert cli.main(["cdx", path, "--zstd-dictionary", "crawl.dict"]) == cli.EXIT_OK
    assert capsys.readouterr().out == "".join(given.lines)
    assert cli.main(["cdx", path, "--zstd-dictionary", "missing.dict"]) == cli.EXIT_USAGE
    assert f"cannot read the zstd dictionary {tmp_path}/missing.dict" in capsys.readouterr().err


def test_a_wrong_dictionary(corpus, tmp_path):
    records = raw_records(corpus["gz"][0])
    zdict = zstdwarc.load_dictionary(corpus["dict"])
    path = write_zst(tmp_path / "apart.warc.zst", records, zdict, dictionary_frame=False)
    other = tmp_path / "other.dict"
    other.write_bytes(zstandard.train_dictionary(8192, records[::2] * 4).as_bytes())
    result = index_file(path, zstd_dictionary=str(other))
    other_id = zstdwarc.load_dictionary(str(other)).dict_id()
    assert [(e.offset, e.reason) for e in result.errors] == [
        (0, f"zstd frame needs dictionary {zdict.dict_id()}, not the dictionary {other_id} it is "
            "decompressed with: a wrong --zstd-dictionary? (or the frame is corrupt)")]


# -- bad input --------------------------------------------------------------------------------

def test_truncated_frames_keep_the_records_before(corpus, tmp_path):
    zst = corpus["zst"][0]
    data = open(zst, "rb").read()
    found = ranges(zst)
    good = index_file(zst)
    cuts = [(i, cut) for i in (5, 17, 40, len(found) - 1)
            for cut in (1, 4, 5, 6, 9, 12, found[i][1] // 2, found[i][1] - 1)]
    cuts += [(1, cut) for cut in range(1, found[1][1])]  # every byte of a small frame
    for i, cut in cuts:
        offset = found[i][0]
        bad = tmp_path / "cut.warc.zst"
        bad.write_bytes(data[:offset + cut])
        result = index_file(str(bad), os.path.basename(zst))
        assert [(e.offset, type(e)) for e in result.errors] == [(offset, ArchiveError)]
        assert "zstd frame is truncated: the file ends inside it" in result.errors[0].reason
        assert str(result.errors[0]).startswith(f"{bad}: offset {offset}: ")
        assert result.lines == [line for line in good.lines
                                if int(json.loads(line.split(" ", 2)[2])["offset"]) < offset]


def test_a_record_whose_frames_end_early_is_cut_short_and_the_rest_read(corpus, tmp_path):
    records = raw_records(corpus["gz"][0])
    zdict = zstdwarc.load_dictionary(corpus["dict"])
    response = next(i for i, r in enumerate(records) if b"WARC-Type: response" in r[:400])
    half = len(records[response]) // 2
    path = write_zst(tmp_path / "early.warc.zst", records, zdict,
                     lambda i, record: [record[:half]] if i == response else [record])
    result = index_file(path)
    with open(path, "rb") as fh:
        items = list(iter_records(fh, path))
    before = items[response - 1]
    assert [(type(e), e.offset, "record is cut short: its zstd frames end" in e.reason)
            for e in result.errors] == [(RecordError, before.offset + before.length, True)]
    assert items[response] is not None and isinstance(items[response], RecordError)
    gz = index_file(corpus["gz"][0])
    assert len(result.lines) == len(gz.lines) - 1 and result.records == len(records) - 1


def test_whole_file_zstd_is_refused(corpus, tmp_path):
    bad = tmp_path / "whole.warc.zst"
    bad.write_bytes(zstandard.ZstdCompressor().compress(uncompressed(corpus["gz"][0])))
    result = index_file(str(bad))
    assert result.lines == [] and len(result.errors) == 1
    assert result.errors[0].offset == 0
    assert "not compressed a record per frame" in result.errors[0].reason


@pytest.mark.parametrize("content,offset,reason", [
    (b"\x28\xb5\x2f\xfd" + b"garbage after a zstd magic" * 4, 0, "or the frame is corrupt"),
    (b"\x28\xb5\x2f\xfd\x00\x00" + b"garbage after a zstd magic" * 4, 0, "corrupt zstd frame"),
    (b"\x5d\x2a\x4d\x18\xff\xff\xff\x7f" + b"x" * 100, 0, "dictionaries of more than"),
    (b"\x5d\x2a\x4d\x18\x00\x10\x00\x00" + b"x" * 100, 0, "dictionary frame is truncated"),
    (b"\x5d\x2a\x4d\x18\x18\x00\x00\x00\x37\xa4\x30\xec\x01\x00\x00\x00" + b"garbage!" * 2
     + zstandard.compress(b"no record"), 0, "not a usable zstd dictionary"),
])
def test_not_a_warc_zst(tmp_path, content, offset, reason):
    bad = tmp_path / "bad.warc.zst"
    bad.write_bytes(content)
    result = index_file(str(bad))
    assert result.lines == [] and len(result.errors) == 1
    assert result.errors[0].offset == offset and reason in result.errors[0].reason, result.errors
    assert str(result.errors[0]).startswith(f"{bad}: offset {offset}: ")


def test_garbage_between_frames(corpus, tmp_path):
    zst = corpus["zst"][0]
    data = open(zst, "rb").read()
    offset, length = ranges(zst)[10]
    bad = tmp_path / "garbage.warc.zst"
    bad.write_bytes(data[:offset] + b"<html>garbage</html>" + data[offset:])
    result = index_file(str(bad), os.path.basename(zst))
    assert [(type(e), e.offset, e.reason) for e in result.errors] == [
        (RecordError, offset, "expected a zstd frame here, found other data (garbage between "
                              "records, or a file that is not zstd); reading goes on at the next "
                              f"record's zstd frame, at offset {offset + 20}")]
    # every record is read, those after the garbage 20 bytes further on
    moved = [line.replace(f'"offset": "{o}"', f'"offset": "{o + 20}"') if o >= offset else line
             for line in index_file(zst).lines for o in [line_offset(line)]]
    assert result.lines == sorted(moved)


def test_a_corrupt_frame_is_reported_and_the_records_after_it_read(corpus, tmp_path):
    zst = corpus["zst"][0]
    data = bytearray(open(zst, "rb").read())
    found = ranges(zst)
    good = index_file(zst).lines
    for i in (0, 7, len(found) - 1):
        offset, length = found[i]
        bad = tmp_path / "corrupt.warc.zst"
        bad.write_bytes(data[:offset + length // 2] + b"\xff" * 8 + data[offset + length // 2 + 8:])
        result = index_file(str(bad), os.path.basename(zst))
        assert [(type(e), e.offset) for e in result.errors] == [
            (RecordError if i < len(found) - 1 else ArchiveError, offset)]
        assert "corrupt zstd frame" in result.errors[0].reason
        assert resumed_at(result.errors) == ([found[i + 1][0]] if i < len(found) - 1 else [])
        assert result.lines == [line for line in good if line_offset(line) != offset]


def _walk(path, skip):
    """What ``iter_records`` yields, then raises, of ``path``, as tuples."""
    items = []
    with open(path, "rb") as fh:
        try:
            for item in iter_records(fh, path, skip=skip):
                items.append(item)
        except ArchiveError as exc:
            items.append(exc)
    return [(type(item).__name__, getattr(item, "offset", None), getattr(item, "length", None),
             getattr(item, "count", None), getattr(item, "reason", None)) for item in items]


@pytest.mark.parametrize("read_size, whole_max", [(READ_SIZE, READ_SIZE), (1000, READ_SIZE),
                                                  (1000, 3000)])
def test_frames_decompressed_whole_read_as_frames_fed_bit_by_bit(corpus, tmp_path, monkeypatch,
                                                                 read_size, whole_max):
    """A frame is decompressed in one call where its end, found from its block headers, is
    read (``_whole_frame``), else fed bit by bit: both give the same records, lengths and
    problems, with records in several frames, frames that do not say their content size,
    damaged frames in records passed over and in records indexed, and an end of file inside
    a frame; with reads that end inside frames (``read_size``), and frames too long to be
    decompressed whole (``whole_max``)."""
    records = raw_records(corpus["gz"][0])
    zdict = zstdwarc.load_dictionary(corpus["dict"])
    unsized = zstandard.ZstdCompressor(level=3, dict_data=zdict, write_checksum=True)

    skippable = b"\x57\x2a\x4d\x18" + (5).to_bytes(4, "little") + b"skip!"

    def frames(i, record):
        if i % 5 == 0:
            third = len(record) // 3
            return [record[:third], record[third:-4], record[-4:]]
        return [record]

    # (not an empty frame after a record: whether it counts in the record's length depends on
    # whether the record's frame was decompressed to its end when the record was finished)
    path = str(tmp_path / "frames.warc.zst")
    with open(path, "wb") as fh:  # every fifth record from i = 2 without its content size
        fh.write(zstdwarc.dictionary_frame(zdict))
        for i, record in enumerate(records):
            if i % 5 == 1:
                fh.write(skippable)
            for piece in frames(i, record):
                if i % 5 == 2:
                    obj = unsized.compressobj()
                    fh.write(obj.compress(piece) + obj.flush())
                else:
                    fh.write(zstdwarc.compressor(3, zdict).compress(piece))
    data = bytearray(open(path, "rb").read())
    found = ranges(path)
    kinds = [zstandard.ZstdDecompressor(dict_data=zdict).decompressobj().decompress(
        bytes(data[o:o + n]))[:60] for o, n in found]
    # two requests (passed over) and two responses (indexed), each a frame, none next to
    # another (after a damaged record, reading goes on at the next one that decompresses)
    damaged = sorted([i for i, kind in enumerate(kinds) if b"request" in kind and i % 5 == 3][3:5]
                     + [i for i, kind in enumerate(kinds) if b"response" in kind and i % 5 == 4][5:7])
    assert all(b - a > 1 for a, b in zip(damaged, damaged[1:]))
    for i in damaged:
        offset, length = found[i]
        data[offset + length // 2:offset + length // 2 + 6] = b"\xff" * 6
    path = tmp_path / "damaged.warc.zst"
    path.write_bytes(data[:-10])
    path = str(path)
    skip = (("request", "warcinfo"), ("application/warc-fields",))
    monkeypatch.setattr(members, "READ_SIZE", read_size)
    monkeypatch.setattr(zstdwarc, "READ_SIZE", whole_max)
    whole = zstdwarc.ZstdFrames._whole_frame
    taken = []

    def counted(self, *args):
        taken.append(whole(self, *args))
        return taken[-1]

    monkeypatch.setattr(zstdwarc.ZstdFrames, "_whole_frame", counted)
    fast = [_walk(path, skip), _walk(path, ((), ())), index_file(path)]
    assert True in taken and False in taken
    monkeypatch.setattr(zstdwarc.ZstdFrames, "_whole_frame", lambda self, *args: False)
    slow = [_walk(path, skip), _walk(path, ((), ())), index_file(path)]
    assert fast[:2] == slow[:2]
    assert [(r.lines, [(type(e), str(e)) for e in r.errors], r.records) for r in fast[2:]] == \
        [(r.lines, [(type(e), str(e)) for e in r.errors], r.records) for r in slow[2:]]
    problems = [item for item in fast[1] if item[0] != "Record"]
    assert [(kind, offset) for kind, offset, *_ in problems] == \
        [("RecordError", found[i][0]) for i in damaged] + [("ArchiveError", found[-1][0])]
    assert all("corrupt zstd frame" in reason for *_, reason in problems[:-1])
    assert len(fast[2].lines) > 100


def test_a_missing_dictionary_ends_the_walk_at_the_first_frame(corpus, tmp_path):
    """Nothing decompresses without the dictionary: no other frame is tried, the file not read
    past its first block."""
    records = raw_records(corpus["gz"][0]) * 4
    path = write_zst(tmp_path / "apart.warc.zst", records,
                     zstdwarc.load_dictionary(corpus["dict"]), dictionary_frame=False)
    with open(path, "rb") as fh:
        walk = iter_records(fh, path)
        with pytest.raises(ArchiveError, match="give the dictionary with --zstd-dictionary"):
            next(walk)
        assert fh.tell() <= READ_SIZE < os.path.getsize(path)


def test_a_corrupt_dictionary_id_in_the_first_frame_is_not_taken_for_a_wrong_dictionary(
        corpus, tmp_path):
    """One frame that names another dictionary may be corrupt: the walk goes on, and gives up
    only where a second one does too (no frame decompressed)."""
    zst = corpus["zst"][0]
    data = bytearray(open(zst, "rb").read())
    found = ranges(zst)
    offset = found[0][0]
    descriptor = data[offset + 4]
    at = offset + 5 + (0 if descriptor & 0x20 else 1)  # the dictionary id, after the window's
    assert descriptor & 3  # (the frame names its dictionary)
    data[at] ^= 0x55
    bad = tmp_path / "first.warc.zst"
    bad.write_bytes(data)
    with open(bad, "rb") as fh:
        items = list(iter_records(fh, str(bad)))
    assert [(type(e), e.offset) for e in items if isinstance(e, ArchiveError)] == \
        [(RecordError, offset)]
    assert "zstd frame needs dictionary" in items[0].reason
    assert [(r.offset, r.length) for r in items[1:]] == found[1:]


def test_a_frame_with_another_dictionary_among_good_ones(corpus, tmp_path):
    records = raw_records(corpus["gz"][0])
    zdict = zstdwarc.load_dictionary(corpus["dict"])
    other = zstandard.train_dictionary(8192, records[::2] * 4)
    path = tmp_path / "mixed.warc.zst"
    with open(path, "wb") as fh:
        fh.write(zstdwarc.dictionary_frame(zdict))
        for i, record in enumerate(records):
            fh.write(zstdwarc.compressor(3, other if i == 5 else zdict).compress(record))
    result = index_file(str(path))
    assert [type(e) for e in result.errors] == [RecordError]
    assert f"zstd frame needs dictionary {other.dict_id()}, not the dictionary {zdict.dict_id()}" \
        in result.errors[0].reason
    assert "reading goes on at the next record's zstd frame" in result.errors[0].reason
    assert result.records == len(records) - 1


def test_decoding_a_range_that_is_not_one_record(corpus):
    zst = corpus["zst"][0]
    (a, la), (b, lb) = ranges(zst)[3:5]
    with pytest.raises(ArchiveError, match="more than one record"):
        read_record(zst, a, la + lb)
    with pytest.raises(ArchiveError, match="zstd frame is truncated"):
        read_record(zst, a, la - 1)
    with pytest.raises(ArchiveError, match="no zstd frame starts at this offset"):
        read_record(zst, a + 1, la)
    with pytest.raises(ArchiveError, match="the file ends 7 bytes before"):
        read_record(zst, os.path.getsize(zst) - 10, 17)


# -- inputs and builds --------------------------------------------------------------------------

def test_build_from_warc_zst_equals_build_from_warc_gz(corpus, tmp_path):
    gz_out, zst_out = tmp_path / "gz", tmp_path / "zst"
    gz_dir = os.path.dirname(corpus["gz"][0])
    build([gz_dir], str(gz_out), BuildOptions(shards=2, lines_per_block=20, runner="inline"))
    for runner in ("inline", "local"):
        build(corpus["zst"], str(zst_out), BuildOptions(shards=2, lines_per_block=20,
                                                        runner=runner, skip_existing=False))
        assert cluster_fields(zst_out) == cluster_fields(gz_out)
        # (beside each CDX file its .meta.json)
        assert sorted(n for n in os.listdir(zst_out / "cdx") if n.endswith(".cdx.gz")) == sorted(
            cdx_name(n.replace(".warc.gz", ".warc.zst")) for n in os.listdir(gz_dir))


def cluster_fields(out):
    """The fields (place aside) of the lines of the shards the cluster publishes (the
    newest cluster/build-NNNNN/)."""
    published = max((out / "cluster").glob("build-*"))
    lines = []
    for shard in sorted(published.glob("cdx-*.gz")):
        data = shard.read_bytes()
        lines += gzip.decompress(data).decode().splitlines() if data else []
    assert lines, f"no lines in the shards of {published}"
    return fields_but_place(lines)


def test_spark_build_from_warc_zst(corpus, tmp_path, spark):
    gz_out, zst_out = tmp_path / "gz", tmp_path / "zst"
    build([os.path.dirname(corpus["gz"][0])], str(gz_out), BuildOptions(shards=2, runner="inline"))
    summary = build(corpus["zst"], str(zst_out), BuildOptions(shards=2, runner="spark",
                                                               spark_context=spark))
    assert summary.errors == [] and cluster_fields(zst_out) == cluster_fields(gz_out)


def test_build_with_a_dictionary_kept_apart(corpus, tmp_path, capsys, monkeypatch):
    records = raw_records(corpus["gz"][1])
    apart = tmp_path / "in"
    apart.mkdir()
    write_zst(apart / "a.warc.zst", records, zstdwarc.load_dictionary(corpus["dict"]),
              dictionary_frame=False)
    monkeypatch.chdir(tmp_path)
    shutil.copy(corpus["dict"], "crawl.dict")
    assert cli.main(["build", "in", "-o", "out", "--zstd-dictionary", "crawl.dict",
                     "--no-progress"]) == cli.EXIT_OK
    capsys.readouterr()
    assert cluster_fields(tmp_path / "out") == fields_but_place(index_file(corpus["gz"][1]).lines)
    assert cli.main(["build", "in", "-o", "out2", "--no-progress"]) == cli.EXIT_FAILED
    assert "--zstd-dictionary FILE" in capsys.readouterr().err
    assert cli.main(["build", "in", "-o", "out3", "--zstd-dictionary", "in/a.warc.zst"]) == \
        cli.EXIT_USAGE
    assert "not a usable zstd dictionary" in capsys.readouterr().err


def test_warc_zst_found_by_name_and_by_content(corpus, tmp_path, capsys):
    unnamed = tmp_path / "archive-without-extension"
    shutil.copy(corpus["zst"][0], unnamed)
    assert cli.main(["cdx", str(unnamed)]) == cli.EXIT_OK
    assert fields_but_place(capsys.readouterr().out.splitlines()) == fields_but_place(index_file(corpus["zst"][0]).lines)


def test_a_highly_compressible_record_is_never_held_whole(tmp_path, monkeypatch):
    """zstd expands up to 32768:1 (a 4-byte block of one repeated byte gives 128 KiB): the
    compressed bytes fed at once are cut so that no call gives more than OUTPUT_MAX."""
    payload = bytes(300 << 20)  # 300 MiB of zeros: 9 KiB compressed
    block = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n" + payload
    record = (b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.com/zeros\r\n"
              b"WARC-Date: 2024-01-01T00:00:00Z\r\nWARC-Record-ID: <urn:uuid:1>\r\n"
              b"Content-Type: application/http; msgtype=response\r\n"
              b"Content-Length: %d\r\n\r\n" % len(block)) + block + b"\r\n\r\n"
    path = tmp_path / "zeros.warc.zst"
    path.write_bytes(zstandard.ZstdCompressor(level=1, write_checksum=True).compress(record))
    digest = base64.b32encode(hashlib.sha1(payload).digest()).decode()
    del payload, block, record
    largest = [0]
    decompress = zstdwarc.ZstdFrames._decompress

    def watched(self, step):
        data = decompress(self, step)
        largest[0] = max(largest[0], len(data))
        return data

    monkeypatch.setattr(zstdwarc.ZstdFrames, "_decompress", watched)
    result = index_file(str(path))
    assert result.errors == [] and len(result.lines) == 1
    assert f'"digest": "{digest}"' in result.lines[0]  # the whole payload was read
    assert 0 < largest[0] <= zstdwarc.OUTPUT_MAX + zstdwarc.BLOCK_MAX


def test_index_job_launcher_takes_a_dictionary_kept_apart(corpus, tmp_path):
    """docs/hadoop-and-emr.md: INDEX_ARGS=(--zstd-dictionary URI) in index_env.sh."""
    from test_launchers import REPO, run, script_env, write_env
    apart = write_zst(tmp_path / "a.warc.zst", raw_records(corpus["gz"][0]),
                      zstdwarc.load_dictionary(corpus["dict"]), dictionary_frame=False)
    (tmp_path / "warcs.txt").write_text(apart + "\n")
    env = write_env(tmp_path / "env.sh", RUNNER="inline", MRJOB_CONF=REPO / "mrjob.conf.sample",
                    WARC_MANIFEST=tmp_path / "warcs.txt", CDX_DIR=tmp_path / "cdx",
                    PYTHON=sys.executable, INDEX_ARGS=["--zstd-dictionary", corpus["dict"]])
    result = run("runindexwarcs.sh", script_env(env), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = gzip.decompress((tmp_path / "cdx" / cdx_name("a.warc.zst")).read_bytes()).decode().splitlines()
    assert lines and fields_but_place(lines) == fields_but_place(index_file(corpus["gz"][0]).lines)


def test_records_read_over_http_with_the_dictionary_read_once(corpus):
    """One ranged read a record, and the dictionary frame read once (two small reads) per
    file; `cdx` of an http(s):// .warc.zst streams it."""
    import rangeserver
    zst = corpus["zst"][1]
    expected = raw_records(corpus["gz"][1])
    with rangeserver.serving(os.path.dirname(zst)) as server:
        url = f"{server.url}/{os.path.basename(zst)}"
        zstdwarc._file_dictionary.cache_clear()
        got = [read_record(url, offset, length) for offset, length in ranges(zst)[:40]]
        assert got == expected[:40]
        ranged = [r[2] for r in server.requests if r[2]]
        assert len(ranged) == 42 and ranged.count("bytes=0-7") == 1
        assert len([r for r in ranged if r.startswith("bytes=8-")]) == 1  # the dictionary
        assert fields_but_place(index_file(url).lines) == fields_but_place(index_file(zst).lines)
