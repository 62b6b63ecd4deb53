"""Existing indexes as input, one class per kind of source behind one interface (as pywb's
``warcserver/index`` has one per kind of index): flat CDX files (``CdxFile``), ZipNum
clusters (``ZipNumCluster``) and the 2012 Common Crawl URL index (``legacy``); ``sources.open_index`` opens one by its kind.

    source = open_index("sample_archive/cdxj/example.cdxj")
    source.format               # "cdxj", "cdx11" or "cdx9"
    for chunk in source.chunks():  # lists of lines: bytes, no newline, in file order
        ...
    source.lines()              # the same lines one at a time
    source.problems             # malformed lines met: [{"file", "line", "reason"}, ...]
    source.malformed            # how many (problems lists the first MAX_PROBLEMS)
    source.unsorted             # None, or {"file", "line"}: the first line that sorts before
                                # the one above it (bytewise, without newlines, as clusters
                                # sort), set as soon as the chunk holding it is read
    source.lines_read           # lines the last reading yielded
    source.notes                # what reading changed: [{"file", "line", "message"}, ...]
                                # (a UTF-8 byte order mark left out)
    source.target, source.rekey # set to have the lines converted to another format, and
                                # their URL keys made SURT keys (``cdxline.convert``)

**The lines of a source are what goes into a cluster, whatever engine builds it**: its
well-formed lines, UTF-8, in file order, without their newline; headers, blank lines,
a UTF-8 byte order mark at the start of a file and malformed lines left out (malformed
ones reported), converted where ``target`` or ``rekey`` says. Every engine reads index inputs
through ``chunks()``, or reads files that ``indexprep`` checked give exactly these lines
to the jobs' own line readers (else it hands them a rewritten file of these lines).

A flat file is CDXJ (``urlkey timestamp {json}``), CDX11 or CDX9 (by its `` CDX``
header's legend, else by the field count of its lines), plain or gzipped (any number of
gzip members, whatever its name). Lines end at ``\\n``; trailing ``\\r`` are dropped (as the
jobs' readers drop them). A line is malformed when it is not UTF-8, has no URL key or
one holding white space (the jobs' readers would drop it), a timestamp that is not
digits, too few or too many fields for its format, a carriage return inside (Hadoop's
line reader would end the line there), or (CDXJ) a JSON block that is not one JSON
object with an ``offset`` and a ``length`` that are whole numbers (``copy``, ``query
--output json`` and the columnar table need them; two lines run together are not one
object). A chunk of well-formed ASCII lines is checked with one regular expression match
(for CDXJ, a grammar of flat JSON objects; a line it does not take is parsed), and its
order with one sort of an already sorted list, both in C; a chunk with anything else is
checked line by line.

The URL keys of an index must be SURT keys (``pt,mocho)/cab/``) for a query to find its
captures: ``open_index`` refuses an index whose first lines mostly have URLs without
scheme as keys (``mocho.pt/cab/``, Wayback's non-SURT form), unless asked to ``rekey``.

``chunks()`` reads the source anew at each call and fills the counters as it goes; a
source that cannot be read on (a cut gzip member, a shard not there) raises
``IndexInputError`` after yielding what came before. Sorting is the reader's job:
unsorted input is reported, never reordered. A cluster is read shard by shard, in the
order its index names them, as flat gzipped files; its shards are found where pywb
finds them (its ``.loc`` file, relative paths resolved against the index's directory,
else beside the index), but never outside the index's directory.
"""
import contextlib
import itertools
import json
import re

from isal import isal_zlib

from .. import storage
from ..cdx.cdxline import FORMATS, LEGENDS, PLAIN_URL_KEY, convert, is_cdx_line
from ..zipnum.layout import BadIdxLine, parse_idx_line
# cluster_index: a cluster given by its location (``export``) is found as every reader finds it
from ..zipnum.places import Shards, cluster_index

# The classic formats a cluster is built of, and their legends
CLASSIC = {fmt: LEGENDS[fmt] for fmt in FORMATS if fmt in LEGENDS}
# Field count -> format of a CDX line that is not CDXJ
FIELD_COUNTS = {len(legend.split()): fmt for fmt, legend in CLASSIC.items()}
LEGEND_FORMATS = {legend: fmt for fmt, legend in CLASSIC.items()}
# A URL key and a timestamp: the key holds no white space as ``cdxline.is_cdx_line`` sees
# it in ASCII (str's \s holds \x1c-\x1f too; a non-ASCII line is asked ``is_cdx_line``)
_HEAD = rb"[^\s\x1c-\x1f]++ [0-9]++"
# A flat JSON object (string keys; string, number, true, false or null values) that has
# an "offset" and a "length" of digits, in either order, as a CDXJ line's JSON block must
# be. Strings are matched as runs of plain characters between escapes, and runs are
# possessive: so a chunk costs about 3 times what looking for the closing brace alone
# did (bench/read_indexes.py: 2.5 us a line, not 0.8), less than parsing each line's JSON
# (measured 7-8 times). A line it refuses is asked ``_json_problem`` (nested values, say), the judge: the
# grammar takes nothing that refuses
_STRING = rb'"[^"\\\x00-\x1f]*+(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*+)*+"'
_VALUE = (rb"(?:" + _STRING + rb"|-?+(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][+-]?+[0-9]++)?+"
          rb"|true|false|null)")
_WS = rb"[ \t]*+"
_MEMBER = _STRING + _WS + b":" + _WS + _VALUE + _WS
_NEXT = b"," + _WS + _MEMBER
_OFFSET, _LENGTH = (b'"' + name + b'"' + _WS + b":" + _WS + rb'(?:"[0-9]++"|0|[1-9][0-9]*+)' + _WS
                    for name in (b"offset", b"length"))
_JSON = (rb"\{" + _WS + rb"(?:" + _MEMBER + b"," + _WS + rb")*?(?:"
         + _OFFSET + rb"(?:" + _NEXT + rb")*?," + _WS + _LENGTH + b"|"
         + _LENGTH + rb"(?:" + _NEXT + rb")*?," + _WS + _OFFSET + rb")(?:" + _NEXT + rb")*+\}")
# The rest of a well-formed line of each format after its key and timestamp (possessive:
# nothing is tried again, which saves a tenth of the time of a chunk)
_REST = {"cdxj": b" " + _JSON,
         **{fmt: rb"(?: [^ \n]*+){%d}" % (len(legend.split()) - 2) for fmt, legend in CLASSIC.items()}}
# One well-formed line (no newline), and a whole chunk of them, each ending in \n
WELL_FORMED = {fmt: re.compile(_HEAD + rest + rb"\Z") for fmt, rest in _REST.items()}
ALL_WELL_FORMED = {fmt: re.compile(rb"(?:" + _HEAD + rest + rb"\n)*+") for fmt, rest in _REST.items()}
LINE_HEAD = re.compile(_HEAD + b" ")
HEADER = re.compile(rb" ?CDX ([^\r\n]*?)\s*\Z")
# Malformed lines listed per source (all are counted)
MAX_PROBLEMS = 100
# Lines read to find the format of a file whose first lines are malformed
DETECT_LINES = 1000
# Bytes inflated at a time, and about the size of a chunk of lines: pieces of this size
# split into lines fastest
CHUNK_BYTES = 1 << 18
GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"
# What a second line's start looks like where a line end was lost after a JSON block
_RUN_TOGETHER = re.compile(rb"\}[^\s\x1c-\x1f{}\"]++ [0-9]++ \{")


class IndexInputError(Exception):
    """An index input that cannot be read (on): a whole-file problem, not a malformed line."""

    def __init__(self, path, reason, line=0):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason, self.line = path, reason, line

    def as_dict(self):
        return {"file": self.path, "line": self.line, "reason": self.reason}


def line_format(line):
    """"cdxj", "cdx11" or "cdx9" for one CDX line (bytes, no newline); None if it is none."""
    parts = line.split(b" ", 2)
    if len(parts) < 3 or not parts[0] or not parts[1].isdigit():
        return None
    if parts[2].startswith(b"{"):
        return "cdxj"
    return FIELD_COUNTS.get(line.count(b" ") + 1)


def header_format(line):
    """The format a `` CDX ...`` header line declares; None if ``line`` is no header;
    ValueError for a legend of another format."""
    match = HEADER.match(line)
    if not match:
        return None
    legend = match.group(1).decode("utf-8", "replace")
    if legend not in LEGEND_FORMATS:
        known = "; ".join(f"{fmt}: {legend}" for fmt, legend in CLASSIC.items())
        raise ValueError(f"its CDX legend {legend!r} is not one of the formats a cluster is "
                         f"built of ({known}): convert it to one of them with the tool "
                         "that wrote it (build --cdx-format converts between these three only)")
    return LEGEND_FORMATS[legend]


def looks_like_cdx(head):
    """Whether ``head`` (the first bytes of a file, inflated) starts with a CDX line or header."""
    first = head.split(b"\n", 1)[0].rstrip(b"\r").removeprefix(BOM)
    try:
        return header_format(first) is not None or line_format(first) is not None
    except ValueError:
        return True  # a CDX header of a legend we do not build: say so when it is opened


def _utf8(data):
    """``data`` as text, or None if it is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _check(fmt, line):
    """Why ``line`` (trailing ``\\r`` dropped) is not a well-formed line of format ``fmt``;
    None if it is one."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte {exc.start})"
    if b"\r" in line:
        return "a carriage return (CR) inside the line: Hadoop's line reader would end it there"
    if WELL_FORMED[fmt].match(line) is not None and (line.isascii() or is_cdx_line(text)):
        return None
    json_problem = None
    if fmt == "cdxj":
        parts = line.split(b" ", 2)
        if len(parts) < 3:
            return "expected 'urlkey timestamp {json}'"
        if not (parts[2].startswith(b"{") and parts[2].endswith(b"}")):
            return "its JSON block does not start with '{' and end with '}' (cut short?)"
        json_problem = _json_problem(text.split(" ", 2)[2])
    else:
        parts = line.split(b" ")
        wanted = len(CLASSIC[fmt].split())
        if len(parts) != wanted:
            return f"{len(parts)} fields, not the {wanted} of {fmt} ({CLASSIC[fmt]})"
    if not parts[0]:
        return "no URL key"
    if not parts[1].isdigit():
        return f"timestamp {parts[1][:40].decode('utf-8', 'replace')!r} is not digits"
    if LINE_HEAD.match(line) is None or not is_cdx_line(text):
        return "white space in its URL key"
    return json_problem


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def _json_problem(block):
    """Why the JSON block of a CDXJ line (text) is not an object with an offset and a
    length that are whole numbers; None if it is one."""
    try:
        record = json.loads(block, parse_constant=_no_constant)
    except ValueError as exc:
        if _RUN_TOGETHER.search(block.encode("utf-8")):
            return "two lines run together (a line end lost?): its JSON block holds another line"
        return f"its JSON block is not valid JSON: {exc}"
    for name in ("offset", "length"):
        value = record.get(name)
        if value is None:
            return f"its JSON has no {name!r} (copy and query need where the record is)"
        if not (type(value) is int and value >= 0
                or type(value) is str and value.isascii() and value.isdigit()):
            return f"its {name} {str(value)[:40]!r} is not a whole number"
    return None


class Inflated:
    """The bytes of a file object in pieces of at most ``size`` bytes, gunzipped member
    after member if it starts like gzip; ``members`` counts the gzip members met so far
    (0 for a plain file)."""

    def __init__(self, fh, path, size=CHUNK_BYTES):
        self.fh, self.path, self.size, self.members = fh, path, size, 0

    def __iter__(self):
        size = self.size
        data = self.fh.read(size)
        if not data.startswith(GZIP_MAGIC):
            while data:
                yield data
                data = self.fh.read(size)
            return
        read, start = len(data), 0  # bytes read so far; where the current member starts
        inflater = isal_zlib.decompressobj(31)
        self.members = 1
        while True:
            try:
                # bounded pieces: splitting them into lines is much faster than huge ones
                out = inflater.decompress(data, size)
            except isal_zlib.error as exc:
                raise IndexInputError(self.path, f"corrupt gzip member at byte {start}: {exc}") from None
            if out:
                yield out
            if inflater.eof:
                data = inflater.unused_data
                if not data:
                    data = self.fh.read(size)
                    read += len(data)
                    if not data:
                        return
                start = read - len(data)
                inflater = isal_zlib.decompressobj(31)
                self.members += 1
            elif inflater.unconsumed_tail:
                data = inflater.unconsumed_tail
            else:
                data = self.fh.read(size)
                read += len(data)
                if not data:
                    out = inflater.flush()
                    if out:
                        yield out
                    if not inflater.eof:
                        raise IndexInputError(self.path, f"the gzip member at byte {start} is cut short")
                    return


def whole_lines(pieces, size=CHUNK_BYTES):
    """The bytes of a stream of pieces in parts of whole lines, each ending in ``\\n`` (one
    is added to a last line without), of at least ``size`` bytes but the last (or a line
    longer alone): small pieces (small gzip members) are put together. When the stream
    fails, the whole lines before the failure come first."""
    pending, length = [], 0
    try:
        for piece in pieces:
            pending.append(piece)
            length += len(piece)
            if length < size:
                continue
            data = b"".join(pending) if len(pending) > 1 else piece
            cut = data.rfind(b"\n") + 1
            pending, length = [data[cut:]], len(data) - cut
            if cut:
                yield data if cut == len(data) else data[:cut]
    except IndexInputError:
        data = b"".join(pending)
        cut = data.rfind(b"\n") + 1
        if cut:
            yield data[:cut]
        raise
    data = b"".join(pending)
    if data:
        yield data if data.endswith(b"\n") else data + b"\n"


def split_lines(pieces):
    """The lines (without ``\\n``) of a stream of pieces."""
    for data in whole_lines(pieces):
        lines = data.split(b"\n")
        lines.pop()
        yield from lines


class IndexSource:
    """What every kind of index source has; subclasses define ``kind``, ``format`` and
    ``_files(size)``: the files of the source in order, as ``(path, pieces)``."""

    kind = None

    def __init__(self, path, name=None):
        self.path = path
        self.name = name or path.rsplit("/", 1)[-1]
        self.target, self.rekey = None, False
        self._reset()

    def __repr__(self):
        return f"{type(self).__name__}({self.path!r}, format={self.format!r})"

    def _reset(self):
        self.problems, self.malformed, self.unsorted, self.lines_read = [], 0, None, 0
        self.notes = []
        self._last = None

    def _problem(self, where, reason):
        self.malformed += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append({"file": self.path, **where, "reason": reason})

    def chunks(self, size=CHUNK_BYTES):
        """The well-formed lines of the source (bytes, no newline), in file order, in lists
        of about ``size`` bytes; malformed ones reported, order watched (see the module)."""
        for _, chunks in self.chunks_by_file(size):
            yield from chunks

    def chunks_by_file(self, size=CHUNK_BYTES):
        """``(path, chunks)`` of each file of the source (a cluster's shards) in order:
        ``chunks`` that file's part of ``chunks()``, to be read before the next pair is
        asked for."""
        self._reset()
        for path, pieces in self._files(size):
            yield path, self._file_chunks(path, pieces, size)

    def _file_chunks(self, path, pieces, size):
        number = 0  # lines of the file before the chunk
        for data in whole_lines(pieces, size):
            if not number and data.startswith(BOM):
                # (else its first line's key would hold it, and sort after every other)
                data = data[len(BOM):]
                self.notes.append({"file": path, "line": 1, "message":
                                   "a UTF-8 byte order mark (BOM) at the start: left out"})
            lines = data.split(b"\n")
            lines.pop()
            chunk = self._checked(data, lines, path, number)
            number += len(lines)
            if chunk:
                yield chunk

    def lines(self):
        """The lines of ``chunks()`` one at a time."""
        for chunk in self.chunks():
            yield from chunk

    def write(self, out):
        """Write every line (with its newline) to the binary stream ``out``."""
        for chunk in self.chunks():
            out.write(b"\n".join(chunk) + b"\n")

    def _checked(self, data, lines, path, number):
        """The well-formed lines of ``lines`` (``data`` split at ``\\n``, lines ``number + 1``
        on of ``path``), counted and their order watched."""
        if (b"\r" in data or ALL_WELL_FORMED[self.format].fullmatch(data) is None
                or not (data.isascii() or _utf8(data) is not None and is_cdx_line_all(lines))):
            lines, numbers = self._sifted(lines, path, number)
        else:
            numbers = None
        if lines and (self.rekey or self.target not in (None, self.format)):
            numbers = numbers or range(number + 1, number + 1 + len(lines))
            lines, numbers = self._converted(lines, numbers, path)
        if not lines:
            return lines
        if self.unsorted is None:
            if self._last is not None and lines[0] < self._last:
                self._unsorted(path, numbers[0] if numbers else number + 1)
            elif lines != sorted(lines):
                first = next(i for i in range(1, len(lines)) if lines[i] < lines[i - 1])
                self._unsorted(path, numbers[first] if numbers else number + first + 1)
        self._last = lines[-1]
        self.lines_read += len(lines)
        return lines

    def _converted(self, lines, numbers, path):
        """``lines`` (well-formed) converted (``cdxline.convert``) and their numbers; the
        lines that cannot be reported."""
        kept, kept_numbers = [], []
        target = self.target or self.format
        for line, number in zip(lines, numbers):
            try:
                kept.append(convert(line, self.format, target, self.rekey))
            except ValueError as exc:
                self._problem({"file": path, "line": number}, f"cannot convert it: {exc}")
                continue
            kept_numbers.append(number)
        return kept, kept_numbers

    def check_keys(self):
        """IndexInputError if the URL keys of the first lines of the source are mostly URLs
        without scheme, not SURT keys (``cdxline.PLAIN_URL_KEY``): a query would find none."""
        first, keys, plain = None, 0, 0
        with contextlib.closing(self._files(CHUNK_BYTES)) as files:
            lines = itertools.chain.from_iterable(split_lines(pieces) for _, pieces in files)
            try:
                for number, line in enumerate(itertools.islice(lines, DETECT_LINES), 1):
                    if line_format(line) != self.format:
                        continue
                    key = line.split(b" ", 1)[0].removeprefix(BOM).decode("utf-8", "replace")
                    keys += 1
                    if PLAIN_URL_KEY.match(key):
                        plain += 1
                        first = first or (number, key)
            except IndexInputError:
                pass  # what was read tells; reading the source reports the failure
        if plain * 2 > keys:
            raise IndexInputError(self.path, f"its URL keys are URLs, not SURT keys "
                                  f"({first[1][:100]!r} where a SURT key reads like "
                                  "'pt,mocho)/cab/'): a query would find none of its captures; "
                                  "use --rekey to compute SURT keys", first[0])

    def _unsorted(self, path, line):
        self.unsorted = {"file": path, "line": line}

    def _sifted(self, lines, path, number):
        """The well-formed ones of ``lines`` and their line numbers, one line at a time."""
        fmt, kept, numbers = self.format, [], []
        for number, line in enumerate(lines, number + 1):
            if line[-1:] == b"\r":
                line = line.rstrip(b"\r")
            why = _check(fmt, line)
            if why is None:
                kept.append(line)
                numbers.append(number)
                continue
            if not line or line.isspace():
                continue
            if line.startswith((b" CDX ", b"CDX ")):
                try:
                    declared = header_format(line)
                except ValueError as exc:
                    declared = str(exc)
                if declared != fmt:
                    self._problem({"file": path, "line": number},
                                  f"a CDX header of another format in a {fmt} index")
                continue
            self._problem({"file": path, "line": number}, why)
        return kept, numbers


def is_cdx_line_all(lines):
    """Whether every one of ``lines`` (UTF-8 bytes) is a line the jobs' readers keep."""
    return all(is_cdx_line(line.decode("utf-8")) for line in lines)


def detect_format(raw_lines, path):
    """The format of a file from its header or its first well-formed lines; IndexInputError
    if none of its first ``DETECT_LINES`` lines tells."""
    for number, line in enumerate(raw_lines, 1):
        line = line.rstrip(b"\r")
        if number == 1:
            line = line.removeprefix(BOM)
        try:
            declared = header_format(line)
        except ValueError as exc:
            raise IndexInputError(path, str(exc), number) from None
        found = declared or line_format(line)
        if found:
            return found
        if number >= DETECT_LINES:
            break
    raise IndexInputError(path, "not a CDX or CDXJ index: no line of its start is one "
                                "('urlkey timestamp {json}', or 11 or 9 fields)")


class CdxFile(IndexSource):
    """A flat CDX, CDX11 or CDX9 file, plain or gzipped, local or remote (``storage``)."""

    kind = "cdx"

    def __init__(self, path, name=None):
        super().__init__(path, name)
        self.members = None  # gzip members (0 when plain), known once chunks() read the file
        with storage.open_read(path) as fh:
            self.format = detect_format(split_lines(Inflated(fh, path)), path)

    def _files(self, size):
        with storage.open_read(self.path) as fh:
            stream = Inflated(fh, self.path, size)
            yield self.path, stream
        self.members = stream.members


class ZipNumCluster(IndexSource):
    """A ZipNum cluster given by its index (``cluster.idx``; pywb's ``.idx``/``.summary``),
    read shard after shard in the order the index names them."""

    kind = "cluster"

    def __init__(self, path, name=None):
        super().__init__(path, name)
        try:
            # where query reads them (a remote cluster's beside its index)
            self.places = Shards(storage.abspath(path))
        except storage.Outside as exc:
            raise IndexInputError(path, str(exc)) from None
        self.directory = self.places.directory
        self.shards = self._shards()
        self.format = None
        for shard in self.shards:
            fh, where = self._open(shard)
            with fh:
                raw = split_lines(Inflated(fh, where))
                first = next(raw, None)
                if first is not None:  # else an empty shard
                    self.format = detect_format(itertools.chain([first], raw), where)
                    break
        if self.format is None:
            raise IndexInputError(path, "the cluster holds no lines")

    def _shards(self):
        names = {}
        try:
            with storage.open_read(self.path) as fh:
                for number, line in enumerate(fh, 1):
                    try:
                        shard = parse_idx_line(line.rstrip(b"\r\n")).shard
                    except BadIdxLine as exc:
                        raise IndexInputError(self.path, f"not a ZipNum index line: {exc}",
                                              number) from None
                    names.setdefault(shard, None)
        except FileNotFoundError:
            raise IndexInputError(self.path, "no such file") from None
        return list(names)

    def _open(self, shard):
        try:
            candidates, refused = self.places.paths(shard)
        except storage.Outside as exc:
            raise IndexInputError(self.path, str(exc)) from None
        for path in candidates:
            try:
                return storage.open_read(path), path
            except FileNotFoundError:
                continue
        why = f"not found at {', '.join(candidates)}" if candidates else "not found"
        if refused:
            why += (f"; not read at {'; '.join(refused)} (a cluster's index and .loc never "
                    "point readers elsewhere here)")
        raise IndexInputError(self.path, f"shard {shard!r}: {why}")

    def _files(self, size):
        for shard in self.shards:
            fh, where = self._open(shard)
            with fh:
                yield where, Inflated(fh, where, size)

