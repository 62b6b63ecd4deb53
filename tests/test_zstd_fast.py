""".warc.zst walked without returning to Python for every frame: the compiled
``_members.zstd_skim`` passes over the frames of the records an indexer skips (frame and
block headers parsed in C, each frame's header block judged there) and starts the record it
stops at; whatever it does not know (a frame cut by the end of a read, a skippable frame, a
damaged or odd one) it leaves to the Python walker, so the items of a walk, good file or
hostile, are those of the Python walker alone, and a walk of a file ``recompress`` wrote
starts few frames in Python. A header block's end is found by the compiled ``header_end``
(``GzipMembers.peek_headers``' search). Importing the walker costs no hashlib and no
threading."""
import re
import subprocess
import sys

import pytest
import zstandard

from helpers import warcs
from test_zstd_damaged import kind, unsized, with_content_size
from test_zstd_skip import BLOCKS, block_header, frames, write
from webarchive_indexing.cdx import indexer
from webarchive_indexing.cdx.indexer import (SKIPPED_CONTENT_TYPES, SKIPPED_WARC_TYPES,
                                             index_file, wants_payload)
from webarchive_indexing.warc import headers, members, walk, zstdwarc
from webarchive_indexing.warc.raw import open_records
from webarchive_indexing.warc.walk import ArchiveError, Record, RecordError, Skipped, iter_records

SKIP = (SKIPPED_WARC_TYPES, SKIPPED_CONTENT_TYPES)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    """A generated crawl's records, a dictionary trained on them, and the .warc.zst
    ``recompress`` writes of them (``write``) with it."""
    directory = tmp_path_factory.mktemp("fast")
    gz = warcs(directory, files=1, captures=150, seed=5)[0]
    with open_records(gz) as found:
        records = [b"".join(record.pieces) for record in found]
    zdict = zstdwarc.train_dictionary(records, 16 << 10)
    return {"records": records, "dict": zdict,
            "zst": write(directory / "crawl.warc.zst", records, zdict)}


def compiled():
    module = pytest.importorskip("webarchive_indexing.warc._members")
    return module.zstd_skim


def items(path, skip=SKIP, verify=False):
    """What a walk of ``path`` gives, comparable: records by their place, digest and type,
    skipped counts, problems by offset and reason, the error that ends it."""
    found = []
    with open(path, "rb") as fh:
        try:
            for item in iter_records(fh, path, wants_payload, skip, zstd_verify=verify):
                if type(item) is Record:
                    found.append(("record", item.offset, item.length, item.payload_sha1,
                                  item.record.rec_type))
                elif type(item) is Skipped:
                    found.append(("skipped", item.count))
                else:
                    assert type(item) is RecordError
                    found.append(("problem", item.offset, item.reason))
        except ArchiveError as exc:
            found.append(("ends", exc.offset, exc.reason))
    return found


def python_alone(monkeypatch):
    """ZstdFrames without what is compiled."""
    for name in ("zstd_skim", "header_end", "skim_block"):
        monkeypatch.setattr(zstdwarc, name, None)


def index(path, verify=False):
    """What indexing ``path`` gives, comparable: its lines (most made by ``zstd_skim`` where
    it is built), the records read, the problems, the warnings."""
    result = index_file(str(path), "f.warc.zst", zstd_verify=verify)
    return (result.lines, result.records,
            [(type(e).__name__, e.offset, e.reason) for e in result.errors], result.warnings)


def same_as_python(path, monkeypatch, skip=SKIP):
    """The walk of ``path`` (verified and not) with the compiled frames and with the Python
    walker alone is the same, and so is its index (with the lines made by ``zstd_skim`` and
    without); returns the walk."""
    walks = {}
    for verify in (False, True):
        walks[verify] = items(path, skip, verify)
        indexed = index(path, verify) if skip == SKIP else None
        with monkeypatch.context() as patched:
            python_alone(patched)
            assert items(path, skip, verify) == walks[verify], verify
            if indexed is not None:
                assert index(path, verify) == indexed, verify
    return walks[False]


# -- few frames in Python ------------------------------------------------------------------------

def test_passed_over_frames_do_not_return_to_python(crawl, monkeypatch):
    compiled()
    started = []
    start_frame = zstdwarc.ZstdFrames._start_frame

    def counted(self):
        started.append(self.raw_offset + self.rpos)
        return start_frame(self)

    monkeypatch.setattr(zstdwarc.ZstdFrames, "_start_frame", counted)
    walked = items(crawl["zst"])
    assert sum(1 for item in walked if item[0] == "record") == 151  # (and one resource)
    assert sum(item[1] for item in walked if item[0] == "skipped") == len(crawl["records"]) - 151
    # the warcinfo record (after the dictionary frame) and the frames a read of 1 MiB cuts
    size = len(open(crawl["zst"], "rb").read())
    assert len(started) <= 1 + 4 * (size // zstdwarc.READ_SIZE + 1), len(started)


def test_common_lines_are_made_without_python(crawl, monkeypatch):
    """A record indexed in Python is one whose frame a read cuts: the line of every other,
    its payload hashed where it has no digest in its headers, is made by ``zstd_skim``."""
    compiled()
    handed = []
    member_record = walk._member_record

    def counted(members, offset, *args):
        item = member_record(members, offset, *args)
        handed.append(item)
        return item

    monkeypatch.setattr(walk, "_member_record", counted)
    lines, records, problems, _ = index(crawl["zst"])
    assert problems == [] and records == len(crawl["records"]) and len(lines) == 151
    size = len(open(crawl["zst"], "rb").read())
    assert len(handed) <= 1 + size // zstdwarc.READ_SIZE, len(handed)
    assert sum(1 for record in without_digest(crawl["records"]) if kind(record) == "response") > 2


def test_the_index_is_the_python_walkers(crawl, monkeypatch):
    for settings in ({}, {"zstd_verify": True}, {"cdx_fields": "cc"}, {"post_append": True}):
        ours = index_file(crawl["zst"], **settings)
        with monkeypatch.context() as patched:
            python_alone(patched)
            theirs = index_file(crawl["zst"], **settings)
        assert ours.errors == theirs.errors == [] and ours.records == theirs.records
        assert ours.lines == theirs.lines, settings


# -- the same walk as Python's, whatever the file -----------------------------------------------

def test_a_good_file_whatever_is_skipped(crawl, monkeypatch):
    for skip in (SKIP, ((), ()), (("request", "metadata", "response", "warcinfo"), ())):
        same_as_python(crawl["zst"], monkeypatch, skip)


def edited(crawl, tmp_path, edit):
    """The crawl's .warc.zst with ``edit(data, frames)`` made of its bytes and frames."""
    data = open(crawl["zst"], "rb").read()
    path = tmp_path / "edited.warc.zst"
    path.write_bytes(edit(data, frames(data)))
    return str(path)


def corrupt_request(data, found):
    """A byte changed in the compressed data of a request's frame (the 7th frame's)."""
    at, header, _, end = found[7]
    return data[:at + header + 6] + bytes([data[at + header + 6] ^ 0x5A]) + data[at + header + 7:]


def skippable_between(data, found):
    """Skippable frames (zstd's and warc-zstd's other magic) between records."""
    out, last = [], 0
    for index, (at, _, _, end) in enumerate(found):
        out.append(data[last:end])
        if index % 5 == 3:
            out.append(b"\x50\x2a\x4d\x18" + (7).to_bytes(4, "little") + b"skipped")
        last = end
    return b"".join(out + [data[last:]])


def reserved_bit(data, found):
    """The reserved bit of the 9th frame's header descriptor set."""
    at = found[9][0]
    return data[:at + 4] + bytes([data[at + 4] | 0x08]) + data[at + 5:]


def lying_request(data, found):
    """A request's frame whose content size says 3 bytes more than its record."""
    at, _, _, end = found[4]
    frame = data[at:end]
    size = zstandard.get_frame_parameters(frame[:18]).content_size
    return data[:at] + with_content_size(frame, size + 3) + data[end:]


def reserved_block(data, found):
    """The second block of a split frame of a record passed over made a reserved one."""
    at, _, blocks, end = next(frame for frame in found[1:] if len(frame[2]) > 1)
    second = blocks[1][0]
    return data[:second] + block_header(3, 10, 1) + b"c" * 10 + data[end:]


def garbage_between(data, found):
    return data[:found[6][3]] + b"garbage!" + data[found[6][3]:]


def truncated(data, found):
    return data[:found[20][0] + 40]


@pytest.mark.parametrize("edit", [corrupt_request, skippable_between, reserved_bit, lying_request,
                                  reserved_block, garbage_between, truncated])
def test_a_hostile_file(crawl, tmp_path, monkeypatch, edit):
    walked = same_as_python(edited(crawl, tmp_path, edit), monkeypatch)
    if edit is not skippable_between:
        assert any(item[0] in ("problem", "ends") for item in walked), walked


def test_random_damage(crawl, tmp_path, monkeypatch):
    """Bits flipped, bytes put in, taken out, the file cut, anywhere after the dictionary."""
    data = open(crawl["zst"], "rb").read()
    first = 8 + int.from_bytes(data[4:8], "little")
    random = __import__("random").Random(26)
    path = tmp_path / "damaged.warc.zst"
    for _ in range(30):
        damaged, at = bytearray(data), random.randrange(first, len(data))
        kind = random.choice(("flip", "cut", "insert", "delete"))
        if kind == "flip":
            damaged[at] ^= 1 << random.randrange(8)
        elif kind == "cut":
            del damaged[at:]
        elif kind == "insert":
            damaged[at:at] = random.randbytes(random.randrange(1, 20))
        else:
            del damaged[at:at + random.randrange(1, 50)]
        path.write_bytes(bytes(damaged))
        same_as_python(str(path), monkeypatch)


def odd_responses(records):
    """The crawl's records, every other response changed in a way that ``zstd_skim``'s line
    maker must leave to Python or make the line of exactly as Python: bytes after the record
    in its frame (not blank; blank, more than a record's newlines; none), a Content-Length
    that says more or less than there is, no digest, an odd date, status or URL, an HTTP
    block that does not end."""
    edits = [
        lambda r: r + b"junk\r\n",
        lambda r: r + b" " * 300,
        lambda r: r[:-4],
        lambda r: r.replace(b"Content-Length: ", b"Content-Length: 1", 1),
        lambda r: r.replace(b"\r\nContent-Length: ", b"\r\nContent-Length: 0", 1),
        lambda r: re.sub(rb"Content-Length: (\d+)",
                         lambda m: b"Content-Length: %d" % (int(m[1]) - 2), r, count=1),
        lambda r: r.replace(b"WARC-Payload-Digest: ", b"X-Was-Digest: ", 1),
        lambda r: r.replace(b"WARC-Date: ", b"WARC-Date: 1", 1),
        lambda r: r.replace(b"\r\n\r\nHTTP/1.1 200", b"\r\n\r\nHTTP/1.1 -", 1),
        lambda r: r.replace(b"WARC-Target-URI: http", b"WARC-Target-URI: <http", 1),
        lambda r: r.replace(b"WARC-Target-URI: http://", b"WARC-Target-URI: http://%41.", 1),
        lambda r: r.replace(b"\r\n\r\nHTTP/1.1 200 OK\r\n", b"\r\n\r\nHTTP/1.1 204 Error\r\n", 1),
        lambda r: r.replace(b"\r\n\r\nHTTP/1.1 200 OK\r\n", b"\r\n\r\nHTTP/1.1 200 OK\r\n\xe9: x\r\n", 1),
        lambda r: r.split(b"\r\n\r\n", 1)[0].replace(b"Content-Length: ", b"Content-Length: 9", 1)
        + b"\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/html\r\n" + b"x" * 5000,
    ]
    out, responses = [], 0
    for record in records:
        if kind(record) == "response":
            # (every other one: after a problem Python reads on to the next record, and that
            # one is Python's; the one after it is zstd_skim's again)
            if responses % 2:
                record = edits[responses // 2 % len(edits)](record)
            responses += 1
        out.append(record)
    return out


@pytest.mark.parametrize("digests", [True, False])
def test_odd_responses(crawl, tmp_path, monkeypatch, digests):
    """Responses that are odd, in frames split after their headers (``recompress``'s) and in
    frames of one block: their lines, and the problems, as Python's; and so without their
    payload digests (their payloads hashed)."""
    records = odd_responses(crawl["records"] if digests else no_digests(crawl["records"]))
    split = write(tmp_path / "split.warc.zst", records, crawl["dict"])
    one_block = zstdwarc.compressor(3, crawl["dict"]).compress
    whole = tmp_path / "whole.warc.zst"
    whole.write_bytes(zstdwarc.dictionary_frame(crawl["dict"])
                      + b"".join(one_block(record) for record in records))
    for path in (split, str(whole)):
        walked = same_as_python(path, monkeypatch)
        assert any(item[0] == "problem" for item in walked), path


# -- payloads without a digest, hashed by zstd_skim ----------------------------------------------

def without_digest(records):
    """Those of ``records`` that carry no payload digest (their payloads are hashed)."""
    return [record for record in records
            if b"\r\nWARC-Payload-Digest: " not in record[:record.find(b"\r\n\r\n")]]


def no_digests(records):
    """``records``, their payload digests taken out (the header renamed); and a response with
    a payload of many blocks (over 128 KiB) added after the first one."""
    out = [record.replace(b"\r\nWARC-Payload-Digest: ", b"\r\nX-Was-Digest: ", 1)
           for record in records]
    response = next(at for at, record in enumerate(out) if kind(record) == "response")
    head, _, content = out[response].partition(b"\r\n\r\n")
    random = __import__("random").Random(7)
    content = content[:-4] + bytes(random.choice(b"abcdefgh \n") for _ in range(300 << 10))
    head = re.sub(rb"Content-Length: \d+", b"Content-Length: %d" % len(content), head, count=1)
    return out[:response + 1] + [head + b"\r\n\r\n" + content + b"\r\n\r\n"] + out[response + 1:]


def hashed_in_python(path, monkeypatch, verify):
    """The offsets of the records whose fields an index of ``path`` makes in Python with a
    payload hashed (by the walker, in ``walk._member_record``)."""
    hashed = []
    record_fields = indexer.record_fields

    def counted(record, offset, length, payload_sha1=None):
        if payload_sha1 is not None:
            hashed.append(offset)
        return record_fields(record, offset, length, payload_sha1)

    with monkeypatch.context() as patched:
        patched.setattr(indexer, "record_fields", counted)
        index(path, verify)
    return hashed


def test_payloads_without_a_digest_are_hashed_by_zstd_skim(crawl, tmp_path, monkeypatch):
    """Responses (and a resource) without a payload digest, in frames split after their
    headers (``recompress``'s), of one block where small, split in their HTTP header block
    or payload (the rest of the frame decompressed for the hash, through its first block's
    decompressobj), verified and not: their lines, digests made by ``zstd_skim``, as
    Python's; none left to Python."""
    compiled()
    records = no_digests(crawl["records"])
    assert len(without_digest(records)) == len(records)
    zstd = zstdwarc.compressor(3, crawl["dict"])

    def cut_in(record, where):
        start = record.find(b"\r\n\r\n") + 4
        split = {"http": start + 10, "payload": record.find(b"\r\n\r\n", start) + 40}[where]
        return zstdwarc.split_frame(zstd, record, split)

    files = {"split": write(tmp_path / "split.warc.zst", records, crawl["dict"])}
    for name, frame in (("whole", zstd.compress), ("in http", lambda r: cut_in(r, "http")),
                        ("in payload", lambda r: cut_in(r, "payload"))):
        path = tmp_path / f"{name}.warc.zst"
        path.write_bytes(zstdwarc.dictionary_frame(crawl["dict"])
                         + b"".join(frame(record) if kind(record) == "response" else
                                    zstd.compress(record) for record in records))
        files[name] = str(path)
    for name, path in files.items():
        walked = same_as_python(path, monkeypatch)
        assert sum(1 for item in walked if item[0] == "record" and item[3]) == sum(
            1 for record in records if kind(record) in ("response", "resource")), name
        # (the first record the walk stops at is Python's: zstd_skim starts after a frame)
        first = next(item[1] for item in walked if item[0] == "record")
        for verify in (False, True):
            assert hashed_in_python(path, monkeypatch, verify) == [first], (name, verify)


def test_a_payload_without_a_digest_in_several_frames(crawl, tmp_path, monkeypatch):
    """A record cut into frames (in its HTTP header block, its payload, or its newlines),
    and a payload that ends in another frame than Content-Length says, are left to Python,
    which hashes them; the records after them are not."""
    records = no_digests(crawl["records"])
    compress = zstdwarc.compressor(3, crawl["dict"]).compress
    responses = [at for at, record in enumerate(records) if kind(record) == "response"]
    cuts = {}
    for number, at in enumerate(responses[2:40:4]):
        record = records[at]
        start = record.find(b"\r\n\r\n") + 4
        cut = (start + 12, record.find(b"\r\n\r\n", start) + 30, len(record) - 2)[number % 3]
        if number % 4 == 3:  # (its Content-Length 2 bytes short: its newlines' frame has more)
            record = re.sub(rb"Content-Length: (\d+)",
                            lambda m: b"Content-Length: %d" % (int(m[1]) - 2), record, count=1)
        cuts[at] = [compress(record[:cut]), compress(record[cut:])]
    path = tmp_path / "cut.warc.zst"
    path.write_bytes(zstdwarc.dictionary_frame(crawl["dict"]) + b"".join(
        b"".join(cuts[at]) if at in cuts else compress(record)
        for at, record in enumerate(records)))
    walked = same_as_python(str(path), monkeypatch)
    assert any(item[0] == "problem" for item in walked)
    for verify in (False, True):
        hashed = hashed_in_python(str(path), monkeypatch, verify)
        # (and the first record the walk stops at: zstd_skim starts after a frame)
        assert len(cuts) // 2 < len(hashed) <= 1 + len(cuts), (verify, hashed)


def test_frames_of_other_writers(crawl, tmp_path, monkeypatch):
    """Frames of one block whatever their size (no split after the headers), frames that do
    not say their content size, and no dictionary: read alike."""
    plain = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=True)
    records = crawl["records"]
    path = tmp_path / "others.warc.zst"
    path.write_bytes(b"".join(unsized(record, None) if index % 7 == 2 else plain.compress(record)
                              for index, record in enumerate(records)))
    walked = same_as_python(str(path), monkeypatch)
    assert sum(1 for item in walked if item[0] == "record") == 151


def test_reads_of_every_size(crawl, tmp_path, monkeypatch):
    """Frames cut by the end of a read wherever it falls (small reads)."""
    for size in (4096, 5000, 1 << 14):
        monkeypatch.setattr(zstdwarc.ZstdFrames, "_read_raw", read_raw(size))
        same_as_python(crawl["zst"], monkeypatch)


def read_raw(size):
    def _read_raw(self):
        rest = self.raw[self.rpos:]
        self.raw_offset += self.rpos
        self.rpos = 0
        data = self.fh.read(size)
        if not data:
            self.raw = rest
            return False
        self.raw = memoryview(rest.tobytes() + data if rest else data)
        return True
    return _read_raw


# -- zstd_skim itself ---------------------------------------------------------------------------

def test_zstd_skim_stops_where_python_must_read(crawl):
    skim = compiled()
    data = open(crawl["zst"], "rb").read()
    found = frames(data)
    decompressor = zstandard.ZstdDecompressor(dict_data=crawl["dict"])
    first = found[1][0]  # the frame after the warcinfo record's

    def run(raw, at=0, verify=False):
        return skim(memoryview(raw), at, decompressor, *SKIP, verify)

    # from the first request on: requests and metadata passed over, the response started
    passed, rpos, started = run(data, first)
    assert (passed, rpos) == (1, found[2][0])
    out, end, first_end, size, checksum, inflater, values = started
    assert values[0] == "response" and end == found[2][3] and checksum is True
    assert out.startswith(b"WARC/1.0\r\nWARC-Type: response") and len(out) < size
    assert first_end == found[2][2][0][0] + 3 + found[2][2][0][2] and inflater is not None
    passed, rpos, started = run(data, first, verify=True)  # decompressed whole
    assert started[2] is None and started[5] is None and len(started[0]) == started[3]
    # anything else: nothing passed, nothing started
    request = data[first:found[1][3]]
    for odd in (data[first:found[1][3] - 1],                      # cut by the end of raw
                b"\x50\x2a\x4d\x18" + bytes(4) + request,           # a skippable frame
                request[:4] + bytes([request[4] | 0x08]) + request[5:],  # a reserved bit
                b"garbage" + request,
                other_dictionary(request),
                unsized(crawl["records"][1], crawl["dict"])):       # no content size
        assert run(odd) == (0, 0, None), odd[:8]
    assert run(request) == (1, len(request), None)
    assert run(request, len(request)) == (0, len(request), None)
    with pytest.raises(TypeError):
        skim(memoryview(request), 0, decompressor, SKIP[0], SKIP[1])
    with pytest.raises(TypeError):
        skim(memoryview(request), 0, decompressor, (1,), (), False)


def other_dictionary(frame):
    """``frame`` (of one block, with a 4-byte dictionary id) saying it needs another one."""
    assert frame[4] & 3 == 3
    at = 5 + (0 if frame[4] >> 5 & 1 else 1)
    return frame[:at] + (int.from_bytes(frame[at:at + 4], "little") ^ 1).to_bytes(4, "little") \
        + frame[at + 4:]


def test_plain_a_word_at_a_time():
    """The compiled header_values (through ``plain``, which ``zstd_skim`` and the gzip
    walker judge blocks by) refuses a byte over 0x7F and a continuation line wherever they
    are, as its Python twin."""
    compiled_values = pytest.importorskip("webarchive_indexing.warc._members").header_values
    block = b"WARC/1.0\r\nWARC-Type: request\r\nContent-Length: 12\r\nX: y\r\n\r\n"
    names = ("WARC-Type", "Content-Length")
    assert compiled_values(block, names) == headers.pure_header_values(block, names) is not None
    for at in range(len(block)):
        odd = block[:at] + b"\xe9" + block[at:]
        assert compiled_values(odd, names) is None, at
        if block[at - 1:at] == b"\n":
            folded = block[:at] + b" " + block[at:]
            assert compiled_values(folded, names) == headers.pure_header_values(folded, names)


def test_header_end_is_the_peek_headers_search():
    header_end = pytest.importorskip("webarchive_indexing.warc._members").header_end
    random = __import__("random").Random(3)
    outs = [b"xyz" + block for block in BLOCKS] + [
        bytes(random.choice(b"ab \t\r\n\x0b\x1c:") for _ in range(random.randrange(40)))
        for _ in range(3000)]
    for out in outs:
        for at in range(len(out) + 1):
            found = members.FIRST_LINE_BLANK.match(out, at) or members.BLANK_LINE.search(out, at)
            assert header_end(out, at) == (found.end() if found else -1), (out, at)
    for wrong in ((bytearray(b"\n\n"), 0), (b"\n\n", "0"), (b"\n\n",)):
        with pytest.raises(TypeError):
            header_end(*wrong)
    with pytest.raises(ValueError):
        header_end(b"\n\n", 3)


def test_the_walker_imports_no_hashlib_or_threading():
    found = subprocess.run(
        [sys.executable, "-c", "import sys, webarchive_indexing.warc.zstdwarc, "
         "webarchive_indexing.warc.walk; "
         "print(sorted({'hashlib', 'threading'} & set(sys.modules)))"],
        capture_output=True, text=True, check=True).stdout
    assert found.strip() == "[]"
