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
gzip members, whatever its name), read (inflated, split into lines) by ``cdx/cdxfile.py``,
the reader of every CDX file. Lines end at ``\\n``; trailing ``\\r`` are dropped (as the
jobs' readers drop them). A line is malformed as ``inputs/linecheck.py`` says (not UTF-8,
a URL key holding white space, a timestamp that is not digits, the fields of another
format, a carriage return inside, a CDXJ JSON block without whole ``offset`` and
``length``...). A chunk of well-formed ASCII lines is checked with one regular expression
match, and its order with one sort of an already sorted list, both in C; a chunk with
anything else is checked line by line.

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

from .. import storage
from ..cdx.cdxfile import BOM, CHUNK_BYTES, IndexInputError, Inflated, split_lines, whole_lines
from ..cdx.cdxline import PLAIN_URL_KEY, convert
from .linecheck import all_well_formed, header_format, line_format, line_problem
from ..zipnum.layout import BadIdxLine, parse_idx_line
from ..zipnum.places import Shards

# Malformed lines listed per source (all are counted)
MAX_PROBLEMS = 100
# Lines read to find the format of a file whose first lines are malformed
DETECT_LINES = 1000


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
        if not all_well_formed(self.format, data, lines):
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
            why = line_problem(fmt, line)
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

