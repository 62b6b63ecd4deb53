"""Zstandard-compressed WARC files (IIPC "warc-zstd" 1.0, ``.warc.zst``): their frames,
their dictionary, and the walk over their records.

A ``.warc.zst`` may start with a *dictionary frame*: a skippable frame (magic
``0x184D2A5D``) whose content is a zstd dictionary, raw (starting ``37 A4 30 EC``) or
itself zstd-compressed. Then each WARC record is one or more whole zstd frames (no
frame holds parts of two records), decoded with that dictionary; other skippable
frames may appear anywhere and are ignored. An index's ``offset``/``length`` address
a record's frames; a reader loads the dictionary from the start of the file, once
(``file_dictionary``; ``raw.read_record`` reads one record so).

``ZstdFrames`` is the walker ``walk.iter_records`` runs for such a file: it has
``members.GzipMembers``' interface, a record's frames taking the place of a gzip
member, so the records, their byte ranges and their problems come out as for gzip.

    with open("example.warc.zst", "rb") as fh:
        for item in records.iter_records(fh, "example.warc.zst"):
            ...
"""
import _thread
import functools
import re

import zstandard

from .. import storage
from .members import FIRST_STEP, TRAILER_MAX, GzipMembers
from .magic import DICT_FRAME_MAGIC, SKIPPABLE_MAGICS, ZSTD_MAGIC
from .base import CHUNK, READ_SIZE, ArchiveError

try:
    from ._members import header_end, skim_block, zstd_skim
except ImportError:  # not built (or built before them): GzipMembers' Python
    header_end = skim_block = zstd_skim = None
# A skippable frame's header: its magic (``SKIPPABLE_MAGICS``), then its content's size.
SKIPPABLE_HEADER = 8
# Dictionaries (compressed or not) accepted: the format asks decoders for 8 MiB at least.
DICT_MAX = 1 << 26
# The start of a frame's content that says it starts a record, not another part of the
# record before it (its WARC version line).
RECORD_START = re.compile(rb"WARC/\d+\.\d+\r?\n")
# What is read of a frame's content to tell (WARC/1.0 and its newline are 10 bytes)
RECORD_START_MAX = 16
# The most a frame's header takes
FRAME_HEADER_MAX = 18
# A block's header, and the most a compressed block decompresses to.
BLOCK_HEADER = 3
BLOCK_MAX = 128 << 10
# Sample bytes a dictionary is trained on, as a multiple of its size (zstd's advice); the
# smallest trained dictionary thought worth its room in a file
SAMPLES_PER_DICT_BYTE = 100
MIN_TRAINED = 4 << 10
# Dictionary ids below are reserved; the format suggests random ids from here up
DICT_ID_MIN = 32768
DICT_ID_MAX = (1 << 31) - 1
# The most one decompression call gives (zstd expands up to 32768:1, so the compressed
# bytes fed at once are cut at a block that would take it past this).
OUTPUT_MAX = 16 << 20


class DictionaryError(ValueError):
    """A zstd dictionary that is missing, wrong, or cannot be used or made."""


def dictionary(data, source):
    """A ``zstandard.ZstdCompressionDict`` of dictionary bytes: a zstd dictionary (starting
    ``37 A4 30 EC``), a zstd-compressed one, or raw content (as ``zstd -D`` takes any file);
    ``source`` names where it came from, for the DictionaryError."""
    if data[:4] == ZSTD_MAGIC:
        try:
            data = zstandard.ZstdDecompressor().decompress(data, max_output_size=DICT_MAX)
        except zstandard.ZstdError as exc:
            raise DictionaryError(f"{source}: not a usable zstd dictionary: it starts with a "
                                  f"zstd frame that does not decompress alone ({exc})") from None
    if len(data) < 8:
        raise DictionaryError(f"{source}: {len(data)} bytes are too few for a zstd dictionary")
    if len(data) > DICT_MAX:
        raise DictionaryError(f"{source}: the dictionary is {len(data)} bytes, more than the "
                              f"{DICT_MAX} accepted")
    zdict = zstandard.ZstdCompressionDict(data)
    try:
        zstandard.ZstdDecompressor(dict_data=zdict).decompressobj()  # loads it
    except zstandard.ZstdError as exc:
        raise DictionaryError(f"{source}: not a usable zstd dictionary: {exc}") from None
    return zdict


@functools.lru_cache(maxsize=8)
def load_dictionary(path):
    """The dictionary in the file ``path`` (local, s3://, http(s)://), read once per process
    (``zstd-dict`` writes such files; ``zstd --train`` too)."""
    try:
        data = storage.read_bytes(path)
    except OSError as exc:
        raise DictionaryError(f"cannot read the zstd dictionary {path}: "
                              f"{getattr(exc, 'strerror', None) or exc}") from None
    if data[:4] == DICT_FRAME_MAGIC:  # the dictionary frame of a .warc.zst, cut out
        data = data[SKIPPABLE_HEADER:SKIPPABLE_HEADER + int.from_bytes(data[4:8], "little")]
    return dictionary(data, path)


def embedded_dictionary(path, header, content):
    """The dictionary of the dictionary frame (at offset 0 of ``path``) whose 8-byte header
    is ``header``; ``content(size)`` reads its content (fewer bytes at the end of the file)."""
    size = int.from_bytes(header[4:8], "little")
    if size > DICT_MAX:
        raise ArchiveError(path, 0, f"dictionary frame of {size} bytes: dictionaries of more "
                                    f"than {DICT_MAX} bytes are not accepted")
    data = content(size)
    if len(data) < size:
        raise ArchiveError(path, 0, "dictionary frame is truncated: the file ends inside it")
    try:
        return dictionary(bytes(data), "its dictionary frame")
    except DictionaryError as exc:
        raise ArchiveError(path, 0, str(exc)) from None


def file_dictionary(path, dictionary_file=None):
    """The dictionary the frames of the .warc.zst ``path`` are decompressed with: that of
    its dictionary frame, else that in ``dictionary_file``, else None; read once per
    process (two small reads: a record's reader needs nothing else from the file's start),
    however many threads (a copy's) ask at once."""
    with _FILE_DICTIONARIES:
        return _file_dictionary(path, dictionary_file)


_FILE_DICTIONARIES = _thread.allocate_lock()  # (threading's Lock: threading costs cdx ~1 ms)


@functools.lru_cache(maxsize=64)
def _file_dictionary(path, dictionary_file):
    header = storage.read_range(path, 0, SKIPPABLE_HEADER)
    if header[:4] == DICT_FRAME_MAGIC:
        return embedded_dictionary(path, header,
                                   lambda size: storage.read_range(path, SKIPPABLE_HEADER, size))
    return load_dictionary(dictionary_file) if dictionary_file else None


def train_dictionary(samples, size):
    """A dictionary of ``size`` bytes trained on ``samples`` (bytes) by zstd's trainer
    (fastCover, its defaults), its id made from the samples (the same samples make the same
    dictionary) in the range the format suggests; DictionaryError if zstd cannot make one."""
    import hashlib  # (OpenSSL, ~3 ms, for training only: not for a walk)
    digest = hashlib.sha1()
    for sample in samples:
        digest.update(len(sample).to_bytes(4, "little"))
        digest.update(sample)
    dict_id = DICT_ID_MIN + int.from_bytes(digest.digest()[:8], "little") % (DICT_ID_MAX - DICT_ID_MIN)
    try:
        return zstandard.train_dictionary(size, samples, dict_id=dict_id)
    except zstandard.ZstdError as exc:
        raise DictionaryError(f"zstd could not train a {size}-byte dictionary on {len(samples)} "
                              f"samples ({sum(map(len, samples))} bytes): {exc}") from None


def sized_dictionary(samples, max_size):
    """A dictionary trained on ``samples``, sized to them (``SAMPLES_PER_DICT_BYTE`` sample
    bytes a byte) up to ``max_size``; None where they are too few for ``MIN_TRAINED`` bytes
    or zstd cannot train one on them."""
    size = min(max_size, sum(map(len, samples)) // SAMPLES_PER_DICT_BYTE)
    if size < MIN_TRAINED:
        return None
    try:
        return train_dictionary(samples, size)
    except DictionaryError:
        return None


def dictionary_frame(zdict, level=19):
    """The dictionary frame that embeds ``zdict`` at the start of a .warc.zst: its content
    compressed (with its size and a checksum) when that is smaller, else raw."""
    raw = zdict.as_bytes()
    packed = zstandard.ZstdCompressor(level=level, write_checksum=True).compress(raw)
    content = packed if len(packed) < len(raw) else raw
    return DICT_FRAME_MAGIC + len(content).to_bytes(4, "little") + content


def compressor(level, zdict=None):
    """A compressor of frames as warc-zstd wants them: with their content size, a checksum
    and, with a dictionary, its id."""
    return zstandard.ZstdCompressor(level=level, dict_data=zdict, write_checksum=True,
                                    write_content_size=True, write_dict_id=True)


def split_frame(zstd, data, split):
    """The frame of ``data`` the ``compressor`` ``zstd`` makes, its first block ending at
    ``split`` (one frame still: its content size and checksum are the whole's)."""
    obj = zstd.compressobj(size=len(data))
    return (obj.compress(data[:split]) + obj.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
            + obj.compress(data[split:]) + obj.flush())


def _dictionary_id(zdict):
    return zdict.dict_id() if zdict is not None else 0


class _Hopeless(Exception):
    """No frame of the file will decompress: the walk ends (``ZstdFrames.hopeless``)."""


class ZstdFrames(GzipMembers):
    """Walks a .warc.zst record by record; reads like a file within one record.

    A record's frames take the place of a gzip member: reading goes on from one frame
    into the next when more is asked for (a record may be cut into several frames),
    unless the next frame starts a record (its content starts with a WARC version
    line): there, as at the end of the file, the record's frames end (``end``). So a
    record whose frames stop early is cut short, and the record after it is read.
    Skippable frames are passed over; the dictionary frame at offset 0 is loaded and
    used for every frame, else ``dictionary`` or the one in the file ``dictionary_file``,
    if given. ``offset``: where ``fh`` starts in the file (a record read alone). A frame
    is decompressed in one call where its header gives its content size and its blocks are
    read (``_whole_frame``: most records), else fed a little at a time. Unless ``verify``,
    a frame of several blocks is decompressed a block at a time from its first, and what of
    it a record's reader leaves unread passed over by its block headers, undecompressed
    and so unchecked (``finish``: most records' payloads, as ``recompress`` writes them).
    """

    START = re.compile(re.escape(ZSTD_MAGIC))
    CUT_SHORT = "record is cut short: its zstd frames end {} bytes before the Content-Length says"
    MORE_THAN_ONE = ("zstd frame holds more than one record ({} bytes follow the first): the "
                     "file is not compressed a record per frame, so its records cannot be "
                     "addressed by byte range (recompress it with `webarchive-index "
                     "recompress`)")
    LONGER = ("record is longer than its Content-Length says: {} more bytes follow it in its "
              "zstd frames")

    def __init__(self, fh, path, dictionary_file=None, dictionary=None, offset=0, verify=True):
        super().__init__(fh, path)
        self.dictionary_file, self.dictionary, self.decompressor = dictionary_file, dictionary, None
        self.raw_offset = offset
        self.verify = verify
        self.frame_start, self.frame_head = 0, b""
        self.frame_end = None  # end offset of the current frame, once decompressed to it
        # of a frame decompressed a block at a time: its content not yet decompressed (None
        # for any other frame), and whether it ends with a checksum (see ``finish``)
        self.frame_left, self.frame_checksum = None, False
        self.frame_stop = None  # the end of the current frame, where zstd_skim found it
        self.whole = None  # the output of a frame decompressed whole, not yet given
        self.started = None  # output of a frame that starts the next record, read ahead
        self.ahead_error = None  # the problem met reading ahead, for the next record
        # dictionary problems (missing, wrong, unusable dictionary) met, and whether any
        # frame decompressed: see ``hopeless``
        self.dictionary_problems = 0
        # a dictionary frame met after the file's start: not its dictionary (warc-zstd puts
        # that first; the zstd tool and FastWARC do not use another one either)
        self.misplaced_dictionary = None
        self.decompressed = False

    def next_member(self):
        """Start the next record's first frame, decompressing its first bytes; return its
        offset, or None at the end of the file."""
        if self.ahead_error is not None:
            error, self.ahead_error = self.ahead_error, None
            raise error
        if self.started is not None:
            self.out, self.started = self.started, None
        else:
            self.start = self.raw_offset + self.rpos  # (where ``recover`` looks on from)
            if self._start_frame() is None:
                return None
            self.start = self.frame_start
            self.out = self._decompress(FIRST_STEP)
        self.start, self.end, self.pos, self.dropped = self.frame_start, None, 0, 0
        return self.start

    @property
    def hopeless(self):
        """Whether no frame will decompress: two of them failed for want of the right
        dictionary, and none has decompressed (one such failure may be a corrupt frame
        header)."""
        return self.dictionary_problems >= 2 and not self.decompressed

    def recover(self):
        """After a problem with the record at ``start`` (or with what stands there instead of
        a frame), find the next zstd frame after it that decompresses and starts a record
        (``GzipMembers.recover``): its offset, or None if there is none (or no frame will
        decompress: ``hopeless``)."""
        if self.hopeless:
            return None
        self.started = self.ahead_error = None
        try:
            return super().recover()
        except _Hopeless:
            return None

    def _start_again(self):
        try:
            offset = self.next_member()
        except ArchiveError:
            if self.hopeless:
                raise _Hopeless from None
            raise
        while len(self.out) < RECORD_START_MAX and self.frame_end is None:
            self.out += self._decompress(CHUNK)
        if not RECORD_START.match(self.out):
            raise ArchiveError(self.path, offset, "the frame here does not start a record")

    def _dictionary_problem(self):
        """Note a missing, wrong or unusable dictionary (see ``hopeless``)."""
        self.dictionary_problems += 1

    def next_piece(self):
        """The next output of the file's frames, one frame after the other, records aside;
        b"" at the end of the file."""
        while True:
            if self.inflater is None or self.frame_end is not None:
                if self._start_frame() is None:
                    return b""
            data = self._decompress(CHUNK)
            if data:
                return data

    def _inflate(self, step=CHUNK):
        """More of the record: of its current frame, or else of the next frame if that
        goes on with this record; b"" when the record's frames end (``end`` is set)."""
        if self.frame_end is None:
            return self._decompress(step)
        end = self.frame_end
        try:
            if self._start_frame() is not None:
                data = self._decompress(FIRST_STEP)
                while len(data) < RECORD_START_MAX and self.frame_end is None:
                    data += self._decompress(CHUNK)
                if not RECORD_START.match(data):
                    return data
                self.started = data
        except ArchiveError as exc:
            # a problem of what follows the record, reported when the walk gets there
            self.ahead_error = exc
        self.end = end
        return b""

    def _need(self, size):
        """Whether ``size`` compressed bytes are there to read (reading more if needed)."""
        while len(self.raw) - self.rpos < size:
            if not self._read_raw():
                return False
        return True

    def _start_frame(self):
        """Start decompressing the next zstd frame, past any skippable frames (loading the
        dictionary of a dictionary frame at offset 0); its offset, None at the end of the
        file."""
        while True:
            offset = self.raw_offset + self.rpos
            if len(self.raw) - self.rpos < 4 and not self._need(4):
                tail = self.raw[self.rpos:].tobytes()
                if not tail:
                    return None
                raise ArchiveError(self.path, offset, "zstd frame is truncated: the file ends "
                                   "inside it" if ZSTD_MAGIC.startswith(tail) else
                                   f"the file ends with {len(tail)} stray bytes, no zstd frame")
            head = self.raw[self.rpos:self.rpos + 4]
            if head == ZSTD_MAGIC:
                break
            if head not in SKIPPABLE_MAGICS:
                raise ArchiveError(self.path, offset,
                                   "expected a zstd frame here, found other data (garbage "
                                   "between records, or a file that is not zstd)")
            if head == DICT_FRAME_MAGIC and offset != 0 and self.misplaced_dictionary is None:
                self.misplaced_dictionary = offset
            self._skip_frame(offset, head == DICT_FRAME_MAGIC and offset == 0)
        if self.decompressor is None:
            if self.dictionary is None and self.dictionary_file:
                try:
                    self.dictionary = load_dictionary(self.dictionary_file)
                except DictionaryError as exc:
                    self._dictionary_problem()
                    raise ArchiveError(self.path, offset, str(exc)) from None
            self.decompressor = zstandard.ZstdDecompressor(dict_data=self.dictionary)
        if len(self.raw) - self.rpos < FRAME_HEADER_MAX:
            self._need(FRAME_HEADER_MAX)  # all of the header, unless the file ends first
        self.frame_start, self.frame_end, self.frame_stop = offset, None, None
        self.frame_head = self.raw[self.rpos:self.rpos + FRAME_HEADER_MAX]
        try:
            params = zstandard.get_frame_parameters(self.frame_head)
            header_size = zstandard.frame_header_size(self.frame_head)
        except zstandard.ZstdError as exc:
            if len(self.frame_head) < FRAME_HEADER_MAX:  # the file ends first
                raise ArchiveError(self.path, offset, "zstd frame is truncated: the file ends "
                                                      "inside it") from None
            raise ArchiveError(self.path, offset, f"corrupt zstd frame header: {exc}") from None
        # zstd gives no more than a frame's content size says: only a frame that does not
        # say, or says more than one call may give, is fed block by block
        self.block, self.frame_left = None, None
        if params.content_size <= OUTPUT_MAX:
            self.block_at = None
            if self._whole_frame(header_size, params.has_checksum, params.content_size):
                return offset
        else:
            self.block_at = offset + header_size
        self.inflater = self.decompressor.decompressobj()
        return offset

    def _whole_frame(self, header_size, checksum, size):
        """Decompress the frame at ``rpos`` (whose header is ``header_size`` bytes, its
        content ``size``) in one call, its end found from its block headers, for
        ``_decompress`` to give: whether it did; unless ``verify``, of a frame of several
        blocks its first block only (``_first_block``). It does not where the frame is longer
        than a read or cut by the end of the file, or does not decompress: the frame is then
        fed bit by bit, and its problem reported so (most records are one short frame: this
        is their path)."""
        raw, i = self.raw, self.rpos + header_size
        while True:
            if i + BLOCK_HEADER > len(raw):  # read on: the frame then starts raw
                i -= self.rpos
                if i + BLOCK_HEADER > READ_SIZE or not self._need(i + BLOCK_HEADER):
                    return False
                raw = self.raw
            header = raw[i] | raw[i + 1] << 8 | raw[i + 2] << 16
            i += BLOCK_HEADER + (1 if header >> 1 & 3 == 1 else header >> 3)  # RLE: 1 byte
            if header & 1:
                break
            if not self.verify:
                return self._first_block(i, checksum, size)
        at = i - self.rpos + (4 if checksum else 0)
        if at > READ_SIZE or (len(raw) - self.rpos < at and not self._need(at)):
            return False
        try:
            self.whole = self.decompressor.decompress(self.raw[self.rpos:self.rpos + at])
        except zstandard.ZstdError:
            return False
        self.decompressed = True
        self.rpos += at
        self.frame_end = self.raw_offset + self.rpos
        return True

    def _first_block(self, end, checksum, size):
        """Decompress the first block (ending at ``end`` in ``raw``) of the frame at ``rpos``
        (of content ``size``), for ``_decompress`` to give; the rest is fed bit by bit when
        read, or passed over (``finish``). Whether it did (not where the block is cut by the
        end of what is read, or does not decompress: the frame is then fed bit by bit)."""
        if end > len(self.raw):  # read on: the frame then starts raw
            end -= self.rpos
            if not self._need(end):
                return False
        inflater = self.decompressor.decompressobj()
        try:
            self.whole = inflater.decompress(self.raw[self.rpos:end])
        except zstandard.ZstdError:
            return False
        self.decompressed, self.inflater = True, inflater
        self.frame_left, self.frame_checksum = size - len(self.whole), checksum
        self.block_at, self.rpos = self.raw_offset + end, end
        return True

    def _pass_frame(self):
        """Move past the rest of the current frame without decompressing it: to its end, found
        from its block headers (each bounded as the format bounds it), or where ``zstd_skim``
        read them already ``frame_stop``, reading on as needed and keeping none of what is
        passed; an ArchiveError where the file ends first or a block header is impossible."""
        block, at = self.block, self.block_at
        last = block is not None and at is None or self.frame_stop is not None
        at = block[0] if block is not None else at
        base = self.raw_offset
        while not last:
            while at - base + BLOCK_HEADER > len(self.raw):
                self.rpos = min(at - base, len(self.raw))
                if not self._read_raw():
                    raise ArchiveError(self.path, self.frame_start,
                                       "zstd frame is truncated: the file ends inside it")
                base = self.raw_offset
            i = at - base
            header = self.raw[i] | self.raw[i + 1] << 8 | self.raw[i + 2] << 16
            kind, size = header >> 1 & 3, header >> 3
            if kind == 3 or size > BLOCK_MAX:
                raise ArchiveError(self.path, self.frame_start, "corrupt zstd frame: a block "
                                   f"at offset {at} " + ("of the reserved type" if kind == 3 else
                                   f"of {size} bytes, more than {BLOCK_MAX}"))
            at += BLOCK_HEADER + (1 if kind == 1 else size)  # RLE: 1 byte
            last = header & 1
        end = self.frame_stop or at + (4 if self.frame_checksum else 0)
        while end - self.raw_offset > len(self.raw):
            self.rpos = len(self.raw)
            if not self._read_raw():
                raise ArchiveError(self.path, self.frame_start,
                                   "zstd frame is truncated: the file ends inside it")
        self.rpos = end - self.raw_offset
        self.frame_end, self.frame_left, self.block, self.block_at = end, None, None, None

    def _skip_frame(self, offset, load):
        """Pass over the skippable frame at ``offset``; ``load``: read its content as the
        file's dictionary."""
        if not self._need(SKIPPABLE_HEADER):
            raise ArchiveError(self.path, offset, "skippable frame is truncated: the file ends "
                                                  "inside its header")
        if load:
            def content(size):
                self._need(SKIPPABLE_HEADER + size)
                return self.raw[self.rpos + SKIPPABLE_HEADER:self.rpos + SKIPPABLE_HEADER + size]

            try:
                self.dictionary = embedded_dictionary(self.path, self.raw[self.rpos:self.rpos + 8],
                                                      content)
            except ArchiveError:
                self._dictionary_problem()
                raise
        left = SKIPPABLE_HEADER + int.from_bytes(self.raw[self.rpos + 4:self.rpos + 8], "little")
        while len(self.raw) - self.rpos < left:  # a large one is read through, not held
            left -= len(self.raw) - self.rpos
            self.rpos = len(self.raw)
            if not self._read_raw():
                raise ArchiveError(self.path, offset, "skippable frame is truncated: the file "
                                                      "ends inside it")
        self.rpos += left

    def _decompress(self, step):
        """The output of the next ``step`` compressed bytes of the current frame (all of it,
        if ``_whole_frame`` decompressed it)."""
        if self.whole is not None:
            data, self.whole = self.whole, None
            return data
        if self.block is None and self.block_at is not None:
            self._need(self.block_at - self.raw_offset - self.rpos + BLOCK_HEADER)
        if self.rpos == len(self.raw) and not self._read_raw():
            raise ArchiveError(self.path, self.frame_start,
                               "zstd frame is truncated: the file ends inside it")
        chunk = self.raw[self.rpos:self._bounded(min(len(self.raw), self.rpos + step))]
        if not chunk:  # a block header is cut by the end of the file
            raise ArchiveError(self.path, self.frame_start,
                               "zstd frame is truncated: the file ends inside it")
        try:
            data = self.inflater.decompress(chunk)
        except zstandard.ZstdError as exc:
            raise ArchiveError(self.path, self.frame_start, self._frame_problem(exc)) from None
        self.decompressed = True
        if self.inflater.eof:
            self.rpos += len(chunk) - len(self.inflater.unused_data)
            self.frame_end = self.raw_offset + self.rpos
            self.frame_left = None
        else:
            self.rpos += len(chunk)
            if self.frame_left is not None:
                self.frame_left -= len(data)
        return data

    def _bounded(self, end):
        """``end`` (an index in ``raw``), or less: so that the blocks that raw[rpos:end]
        completes give at most ``OUTPUT_MAX`` bytes (a block at least). Every block header
        is read before the bytes after it are fed (``block_at``: the next one, None after
        the last; ``block``: the end and output size of the one being fed)."""
        base, budget, counted = self.raw_offset, OUTPUT_MAX, False
        block, at = self.block, self.block_at
        while True:
            if block is None:
                if at is None:
                    break
                i = at - base
                if i + BLOCK_HEADER > len(self.raw):
                    end = min(end, i)  # its header first, once read whole
                    break
                header = self.raw[i] | self.raw[i + 1] << 8 | self.raw[i + 2] << 16
                kind, size = header >> 1 & 3, header >> 3
                block_end = at + BLOCK_HEADER + (1 if kind == 1 else size)  # RLE: 1 byte
                block = block_end, BLOCK_MAX if kind == 2 else size
                at = None if header & 1 else block_end
            block_end, size = block
            if block_end - base > end:
                break
            budget -= size
            if budget < 0 and counted:
                end = block_end - base - 1
                break
            block, counted = None, True
        self.block, self.block_at = block, at
        return end

    def _frame_problem(self, exc):
        """What is wrong with a frame zstd failed to decompress: a missing or wrong
        dictionary, if its header names another, else corrupt data."""
        try:
            wanted = zstandard.get_frame_parameters(bytes(self.frame_head)).dict_id
        except zstandard.ZstdError:
            return f"corrupt zstd frame: {exc}"
        have = _dictionary_id(self.dictionary)
        if wanted and wanted != have:
            self._dictionary_problem()
        if wanted and self.dictionary is None and self.misplaced_dictionary is not None:
            return (f"zstd frame needs dictionary {wanted} and the file's dictionary frame is "
                    f"at offset {self.misplaced_dictionary}, not at its start, where warc-zstd "
                    "puts it (zstd readers do not use it there): give the dictionary with "
                    "--zstd-dictionary FILE")
        if wanted and self.dictionary is None:
            return (f"zstd frame needs dictionary {wanted} and the file has no dictionary "
                    "frame: give the dictionary with --zstd-dictionary FILE (or the frame is "
                    "corrupt)")
        if wanted and wanted != have:
            return (f"zstd frame needs dictionary {wanted}, not the dictionary {have} it is "
                    "decompressed with: a wrong --zstd-dictionary? (or the frame is corrupt)")
        if self.dictionary is None:
            return (f"corrupt zstd frame: {exc} (if the file was compressed with a dictionary "
                    "it does not hold, give it with --zstd-dictionary FILE)")
        return f"corrupt zstd frame: {exc}"

    def skim(self, skip_types, skip_content_types, cdxj=None):
        """``GzipMembers.skim``; where the compiled ``zstd_skim`` is built, the common frames
        in what is read are passed over, and the record stopped at started, by it, in one
        call: the Python of the walk reads only what it leaves (a frame cut by the end of a
        read, a skippable frame, and anything uncommon or wrong, which it reports). ``cdxj``:
        as the compiled gzip walker's, the common records' lines made by ``zstd_skim`` too
        (and counted with those passed over); without it, nothing."""
        passed = 0
        if zstd_skim is not None and self.decompressor is not None and self.started is None \
                and self.ahead_error is None:
            passed, self.rpos, started = zstd_skim(self.raw, self.rpos, self.decompressor,
                                                   skip_types, skip_content_types, self.verify,
                                                   self.raw_offset, cdxj)
            if passed:
                self.decompressed = True
            if started is not None:
                return passed, [], self._started(*started[:-1]), started[-1]
        skipped, problems, offset, values = super().skim(skip_types, skip_content_types)
        return passed + skipped, problems, offset, values

    def _started(self, out, end, first_end, size, checksum, inflater):
        """Take the frame at ``rpos`` as ``next_member`` starts it (``_start_frame``, then
        ``_whole_frame`` or ``_first_block``) from what ``zstd_skim`` made of it: its output
        ``out``, its end in ``raw``, and, where only its first block was decompressed (by
        ``inflater``), that block's end; return its offset."""
        offset = self.frame_start = self.start = self.raw_offset + self.rpos
        self.frame_head = self.raw[self.rpos:self.rpos + FRAME_HEADER_MAX]
        self.block, self.decompressed = None, True
        if first_end is None:
            self.rpos, self.frame_left, self.block_at, self.frame_stop = end, None, None, None
            self.frame_end = self.raw_offset + end
        else:
            self.inflater, self.frame_end, self.frame_stop = inflater, None, self.raw_offset + end
            self.frame_left, self.frame_checksum = size - len(out), checksum
            self.block_at, self.rpos = self.raw_offset + first_end, first_end
        self.out, self.end, self.pos, self.dropped = out, None, 0, 0
        return offset

    def peek_headers(self, start=0):
        """``GzipMembers.peek_headers``, its search for the blank line in what is decompressed
        already made by the compiled ``header_end`` where it is built."""
        if header_end is not None:
            at = self.pos + start
            end = header_end(self.out, at) if at <= len(self.out) else -1
            if end >= 0:
                return self.out[at:end]
        return super().peek_headers(start)

    def skim_block(self, skip_types, skip_content_types):
        """``GzipMembers.skim_block``, by the compiled walker's ``skim_block`` where it is
        built and the block's blank line is decompressed already: most records skimmed are
        passed over without their headers read in Python."""
        if skim_block is not None:
            judged = skim_block(self.out, self.pos, skip_types, skip_content_types)
            if judged is not None:
                return judged
        return super().skim_block(skip_types, skip_content_types)

    def finish(self, unread):
        """Read the rest of the record's frames, where ``unread`` bytes of the record are
        left: None if nothing but the newlines that may end a record follow them, else a
        RecordError (as ``GzipMembers.finish``). A frame decompressed a block at a time whose
        content size says that the record and at most TRAILER_MAX bytes after it (its
        newlines) end with it is passed over undecompressed: neither those bytes nor the
        frame's checksum are checked then (``verify`` does)."""
        rest = len(self.out) - self.pos - unread
        if self.frame_left is not None and 0 < rest + self.frame_left <= TRAILER_MAX \
                and self.end is None and (self.block or self.block_at) is not None:
            self._pass_frame()
            self.dropped += len(self.out)
            self.out, self.pos, self.end = b"", 0, self.frame_end
            return None
        if rest > 0 and self.frame_end is not None and rest <= TRAILER_MAX \
                and not self.out[len(self.out) - rest:].strip():
            # the common case: the record, its newlines and its last frame end together; so
            # the next frame starts the next record, without reading ahead to see
            self.dropped += len(self.out)
            self.out, self.pos, self.end = b"", 0, self.frame_end
            return None
        return super().finish(unread)
