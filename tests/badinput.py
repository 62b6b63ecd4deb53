"""The bad-input corpus: small generated archives (gzipped and uncompressed WARC and ARC,
and a .warc.zst with a dictionary frame), damaged in known ways, and the oracle each one's
index must satisfy.

Damage: truncations at many points of several records, byte flips anywhere, wrong,
missing, malformed and huge Content-Lengths (ARC lengths), bytes inserted into header
lines. Everything is made from seeds: the same cases every run, nothing committed.

The oracle (``check``) knows which records the damage touched (``Case.damaged``) and what
the index of every other one is (the undamaged file's, with offsets moved by what was
inserted or removed); pywb 2.10's indexer reads each damaged file too (it reads no
.warc.zst: for a record of a .warc.zst whose bytes were changed, pywb's line is that of the
same record changed alike in the .warc.gz, ``twin_lines``; of other damage to a .warc.zst,
a cut or a flip, pywb gives no line):

* a record not touched is indexed exactly as in the undamaged file, or, if it is
  missing, a reported problem covers it (the span from a problem's offset to where the
  walk went on, "reading goes on at ... offset N"; a problem that ended the walk covers
  all after it), and pywb does not read it either: no record pywb reads is lost;
* a damaged record is indexed as pywb indexes it (or as it was), or not at all; if pywb
  indexes it and we do not, a problem names its offset: a damaged record that pywb
  reads (a record cut short by the end of the file, say) is an error for us;
* every problem is a line naming the file and an offset within the damage, no traceback
  or Python exception text; nothing else is indexed.
"""
import gzip
import os
import random
import re
from typing import NamedTuple

import zstandard

from helpers import line_offset, resumed_at
from webarchive_indexing.warc import zstdwarc
from webarchive_indexing.commands.corpus import make_corpus, read_manifest

# (format, compression): each base file's 14 captures hold every WARC record type, revisits
# and a response without WARC-Payload-Digest (its payload is hashed); the .warc.zst holds the
# records of the .warc.gz, a frame each, after a dictionary frame
BASES = [("warc", "gz"), ("warc", None), ("arc", "gz"), ("arc", None), ("warc", "zst")]
SEED, CAPTURES, MEAN_KB = 31, 14, 2
# The CDX filename every file is indexed under, so that lines compare across files
FILENAME = "damaged"
# Content-Lengths (ARC lengths) put in place of the right one, as functions of it
LENGTHS = {"minus-1": lambda n: str(n - 1), "minus-10": lambda n: str(n - 10),
           "minus-1000": lambda n: str(max(n - 1000, 0)), "plus-1": lambda n: str(n + 1),
           "plus-10": lambda n: str(n + 10), "plus-1000": lambda n: str(n + 1000),
           "pow63": lambda n: str(2 ** 63), "pow64": lambda n: str(2 ** 64),
           "30-digits": lambda n: "9" * 30, "letters": lambda n: "abc", "negative": lambda n: "-5",
           "missing": None}


class Base(NamedTuple):
    name: str         # e.g. "warc.gz"
    path: str
    data: bytes
    records: list     # (offset, length, kind) of each record, as the manifest gives them
    compression: str  # "gz", "zst" or None
    fmt: str
    lines: dict       # offset -> CDXJ line of the undamaged file
    sep: int          # bytes of blank lines after a record that its manifest length holds
    head: int = 0     # bytes before the first record (a .warc.zst's dictionary frame)
    zdict: object = None  # a .warc.zst's dictionary

    def unpack(self, data):
        """A record's bytes, from what the file holds of it."""
        if self.compression == "zst":
            return zstandard.ZstdDecompressor(dict_data=self.zdict).decompress(data)
        return gzip.decompress(data) if self.compression == "gz" else data

    def pack(self, content):
        """What the file holds of a record whose bytes are ``content``."""
        if self.compression == "zst":
            return zstdwarc.compressor(3, self.zdict).compress(content)
        return gzip.compress(content, 6, mtime=0) if self.compression == "gz" else content


class Case(NamedTuple):
    name: str
    base: Base
    data: bytes
    damaged: frozenset  # offsets (in the damaged file) of the records the damage touched
    zone: tuple         # (start, end): where problems may be reported
    expected: dict      # offset -> line of every record not touched, as it must be indexed
    twin: str = None    # of a .warc.zst record changed: the .warc.gz case changed alike


def make_bases(directory):
    """The undamaged files, each with the lines of its index (``index``: path -> lines)."""
    from webarchive_indexing.cdx.indexer import index_file
    bases = []
    for fmt, compression in BASES:
        name = f"{fmt}.{compression}" if compression else fmt
        if compression == "zst":
            bases.append(_zst_base(directory, bases[0]))
            continue
        (path,) = make_corpus(os.path.join(directory, name), files=1, captures=CAPTURES,
                              seed=SEED, mean_kb=MEAN_KB, fmt=fmt, gzip=compression == "gz")
        records = [(r["offset"], r["length"], r["warc_type"]) for r in read_manifest(path)]
        lines = {line_offset(line): line for line in index_file(path, FILENAME).lines}
        sep = 0 if compression else 4 if fmt == "warc" else 1
        bases.append(Base(name, path, open(path, "rb").read(), records, compression, fmt,
                          lines, sep))
    return bases


def _zst_base(directory, warc_gz):
    """The records of the .warc.gz base as a .warc.zst: a dictionary frame (of a dictionary
    trained on them), then a frame each."""
    from webarchive_indexing.cdx.indexer import index_file
    contents = [warc_gz.unpack(warc_gz.data[offset:offset + length])
                for offset, length, _ in warc_gz.records]
    zdict = zstandard.train_dictionary(4096, contents * 8)
    base = Base("warc.zst", os.path.join(directory, "warc.zst"), b"", [], "zst", "warc", {}, 0,
                zdict=zdict)
    data = zstdwarc.dictionary_frame(zdict)
    head = len(data)
    for (_, _, kind), content in zip(warc_gz.records, contents):
        frame = base.pack(content)
        base.records.append((len(data), len(frame), kind))
        data += frame
    with open(base.path, "wb") as fh:
        fh.write(data)
    lines = {line_offset(line): line for line in index_file(base.path, FILENAME).lines}
    return base._replace(data=data, lines=lines, head=head)


def _moved(base, after, shift, before=None):
    """The lines of the records starting after ``after`` (and ending by ``before``), offsets
    moved by ``shift``; those of the records starting before ``after`` as they are."""
    lines = {}
    for offset, length, _ in base.records:
        if offset == after or offset not in base.lines:
            continue
        if before is not None and offset + length - base.sep > before:
            continue
        moved = offset + shift if offset > after else offset
        lines[moved] = base.lines[offset].replace(f'"offset": "{offset}"', f'"offset": "{moved}"')
    return lines


def _record_at(base, position):
    """The record whose bytes hold ``position``."""
    return next(r for r in base.records if r[0] <= position < r[0] + r[1])


def _targets(base):
    """The records damaged on purpose: the first, the last, and the first of each kind."""
    chosen = {0: base.records[0], len(base.records) - 1: base.records[-1]}
    for i, record in enumerate(base.records):
        if record[2] not in {r[2] for r in chosen.values()}:
            chosen[i] = record
    return [chosen[i] for i in sorted(chosen)]


def _rewrite(base, record, change, name):
    """A case: the record's bytes (decompressed, if compressed) changed by ``change``."""
    offset, length, _ = record
    old = base.data[offset:offset + length]
    new = base.pack(change(base.unpack(old)))
    shift = len(new) - len(old)
    return Case(f"{base.name}-{name}", base, base.data[:offset] + new + base.data[offset + length:],
                frozenset([offset]), (offset, offset + len(new)), _moved(base, offset, shift),
                "warc.gz-" + name if base.compression == "zst" else None)


def _places(case):
    """Where each record of a case whose one record was rewritten is: (offset, length)."""
    (damaged,) = case.damaged
    shift = len(case.data) - len(case.base.data)
    return [(offset + shift * (offset > damaged), length + shift * (offset == damaged))
            for offset, length, _ in case.base.records]


def twin_lines(case, twin, lines):
    """pywb's lines of the .warc.gz case ``twin`` (the same records, changed alike), each at
    the place of its record in the .warc.zst case ``case``."""
    place = dict(zip((offset for offset, _ in _places(twin)), _places(case)))
    moved = []
    for line in lines:
        if line_offset(line) in place:
            offset, length = place[line_offset(line)]
            moved.append(re.sub(r'"length": "-?\d+", "offset": "\d+"',
                                f'"length": "{length}", "offset": "{offset}"', line))
    return moved


def _with_length(base, value):
    """A change putting ``value`` in the record's Content-Length (ARC length), or removing it."""
    def change(content):
        if base.fmt == "arc":
            first, rest = content.split(b"\n", 1)
            fields = first.rsplit(b" ", 1)
            n = int(fields[1])
            return fields[0] + (b" " + value(n).encode() if value else b"") + b"\n" + rest
        head_end = content.index(b"\r\n\r\n")
        found = re.search(rb"\r\nContent-Length: (\d+)", content[:head_end])
        n = int(found[1])
        replacement = b"\r\nContent-Length: " + value(n).encode() if value else b""
        return content[:found.start()] + replacement + content[found.end():]
    return change


def _header_lines(content, fmt):
    """Offsets of places in a record's header lines: its first line, a header of its own
    block, an HTTP status line and an HTTP header (where it has them)."""
    places = [3]
    nl = content.find(b"\n") + 1
    if fmt == "warc":
        places.append(content.find(b"\n", nl) - 4)  # before the end of the second line
        body = content.find(b"\r\n\r\n") + 4
    else:
        body = nl
    if content[body:body + 5] == b"HTTP/":
        places += [body + 6, content.find(b"\n", body) + 3]
    return places


def cases(bases, flips=30):
    """Every case of every base file, in a fixed order."""
    made = []
    for base in bases:
        rng = random.Random(f"{SEED} {base.name}")
        size = len(base.data)
        for target in _targets(base):
            offset, length, kind = target
            # truncations: in the first bytes (gzip header, first line), the header block,
            # the payload, just before the record's end (gzip trailer, trailing newlines)
            for cut in sorted({offset + 1, offset + 5, offset + length // 3, offset + length // 2,
                               offset + length - base.sep - 1, offset + length - 3, offset + length}):
                made.append(_cut(base, cut, f"cut-{kind}-{cut - offset}"))
            for label, value in LENGTHS.items():
                made.append(_rewrite(base, target, _with_length(base, value),
                                     f"length-{label}-{kind}"))
            content = base.unpack(base.data[offset:offset + length])
            for at in _header_lines(content, base.fmt):
                for byte in (b"x", b"\n"):
                    made.append(_rewrite(base, target, lambda c, at=at, byte=byte: c[:at] + byte + c[at:],
                                         f"insert-{byte.hex()}-{kind}-{at}"))
        for cut in (1, 2, 10, size - 1):
            made.append(_cut(base, cut, f"cut-file-{cut}"))
        for _ in range(flips):
            position, bit = rng.randrange(size), 1 << rng.randrange(8)
            made.append(_flip(base, position, bit))
    return made


def _cut(base, cut, name):
    damaged = [r for r in base.records if r[0] < cut < r[0] + r[1] - base.sep]
    # (a cut in what comes before the records, a .warc.zst's dictionary frame, is a problem
    # of the file's start)
    zone = (damaged[0][0], cut) if damaged else (0, cut) if cut <= base.head else (cut, cut)
    return Case(f"{base.name}-{name}", base, base.data[:cut], frozenset(r[0] for r in damaged), zone,
                _moved(base, -1, 0, before=cut))


def _flip(base, position, bit):
    data = bytearray(base.data)
    data[position] ^= bit
    if position < base.head:
        # in a .warc.zst's dictionary: any record may be decompressed wrongly (a frame's
        # checksum tells), or not at all
        return Case(f"{base.name}-flip-{position}-{bit}", base, bytes(data),
                    frozenset(r[0] for r in base.records), (0, len(data)), {})
    record = _record_at(base, position)
    touched = [record]
    if position >= record[0] + record[1] - base.sep:
        # in the blank lines after a record: the next one's start may be taken for more of them
        touched += [r for r in base.records if r[0] == record[0] + record[1]]
    start, end = touched[0][0], touched[-1][0] + touched[-1][1]
    expected = {o: l for o, l in base.lines.items() if not start <= o < end}
    return Case(f"{base.name}-flip-{position}-{bit}", base, bytes(data),
                frozenset(r[0] for r in touched), (start, end), expected)


def write(case, directory):
    """The damaged file of a case, named for it (and ending as its base's name)."""
    path = os.path.join(directory, f"{case.name}.{case.base.name}")
    with open(path, "wb") as fh:
        fh.write(case.data)
    return path


BAD_TEXT = re.compile(r"Error\(|Traceback|object has no attribute|\\n|<class ")


def check(case, path, lines, errors, pywb_lines):
    """What is wrong with our index of a case (``lines``, ``errors`` as ``as_dict`` gives
    them, each with a "kind": ArchiveError or RecordError) given pywb's lines: a list of
    findings, empty when the oracle holds."""
    found = []
    ours = {line_offset(line): line for line in lines}
    pywb = {}
    for line in pywb_lines:
        pywb.setdefault(line_offset(line), line)
    if len(ours) != len(lines):
        found.append("two lines for one offset")
    spans = []
    for error in errors:
        offset, reason = error["offset"], error["reason"]
        if error["file"] != path or BAD_TEXT.search(reason) or "\n" in reason:
            found.append(f"badly reported: {error}")
        if not case.zone[0] <= offset < case.zone[1]:
            found.append(f"problem outside the damage {case.zone}: {error}")
        resumed = resumed_at([reason])
        end = resumed[0] if resumed else float("inf") if error["kind"] == "ArchiveError" else offset + 1
        spans.append((offset, end))
    errors_at = {error["offset"] for error in errors}
    for offset, line in case.expected.items():
        if ours.get(offset) == line:
            continue
        if offset in ours:
            found.append(f"record at {offset} indexed wrongly: {ours[offset]!r}, not {line!r}")
        elif offset in pywb:
            found.append(f"record at {offset} lost, pywb reads it")
        elif not any(start <= offset < end for start, end in spans):
            found.append(f"record at {offset} lost, no problem reported covers it")
    for offset, line in ours.items():
        if offset in case.expected:
            continue
        if offset not in case.damaged:
            found.append(f"indexed what is no record: {line!r}")
        elif line != pywb.get(offset) and line != case.base.lines.get(offset):
            found.append(f"damaged record at {offset} indexed unlike pywb: {line!r}")
    for offset in case.damaged:
        if offset in pywb and offset not in ours and offset not in errors_at:
            found.append(f"damaged record at {offset} that pywb indexes is not reported")
    for offset, line in pywb.items():
        # (in the damage, pywb may take any line for a record's start: that is no record)
        outside = not case.zone[0] <= offset < case.zone[1]
        if offset not in case.expected and offset not in case.damaged and outside:
            found.append(f"pywb reads a record we do not know: {line!r}")
    return found
