"""WACZ files read in place: the WARC/ARC entries of a WACZ's ``archive/`` directory, each
a window onto the bytes of the ZIP file that hold it.

A WACZ (Web Archive Collection Zipped, 1.1.1) is a ZIP file whose ``archive/`` entries are
WARC files *stored*, not compressed again, so an entry's bytes are a stretch of the ZIP
file itself: a record at offset ``o`` of the entry is at ``start + o`` of the WACZ. Its
CDX lines name the WACZ and that offset, which pywb and ``copy`` read with one ranged read
as from any WARC file. The ZIP's central directory (ZIP64 too) is read by ``zipfile``; the
local header of each entry (whose extra field may differ from the central one) says where
its data starts. Nothing of an entry is held in memory: it is read as a file, in blocks.

What cannot be addressed so is refused, an entry at a time, naming it (``problems``):
deflated (or otherwise compressed) and encrypted entries, whose bytes are not the WARC's;
``.warc.zst`` entries, whose dictionary a reader would look for at the start of the WACZ
(and which pywb does not read); ZIP files inside. Other entries (``indexes/``, ``pages/``,
``datapackage.json``) are not records and not read.
"""
import io
import struct
import zipfile
from collections import namedtuple

from .. import storage
from .base import READ_SIZE, ArchiveError, Record, RecordError
from .magic import ZIP_MAGIC, compression

# The directory of a WACZ that holds its WARC files
ARCHIVE_DIR = "archive/"
# A ZIP local file header: its fixed part, and where the lengths of its name and extra
# field are in it
LOCAL_HEADER = 30
_NAME_EXTRA = struct.Struct("<HH")
HOW_TO_FIX = ("store the WARC files uncompressed in the ZIP, as the WACZ format asks "
              "(py-wacz does; zip -0), or index the WARC files themselves")

# An entry of ``archive/`` that is read: its name in the ZIP, where its bytes start in the
# WACZ, and how many there are
Entry = namedtuple("Entry", "name start size")


class EntryRecord(Record):
    """A ``Record`` of a WACZ's entry: its ``offset`` in the WACZ, and the ``entry`` holding it."""
    __slots__ = ("entry",)

    def __init__(self, record, offset, length, payload_sha1, notes, entry):
        super().__init__(record, offset, length, payload_sha1, notes)
        self.entry = entry


class _Positioned(io.RawIOBase):
    """A seekable file of ``size`` bytes read at ``pos``: the subclass's ``readinto`` says
    from where."""

    def __init__(self, size):
        super().__init__()
        self.size, self.pos = size, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def tell(self):
        return self.pos


class _Window(_Positioned):
    """``size`` bytes of the seekable file ``fh`` from ``start``, read as a file of their own
    (the entries of one WACZ are read one after the other, so they share ``fh``)."""

    def __init__(self, fh, start, size):
        super().__init__(size)
        self.fh, self.start = fh, start

    def readinto(self, buffer):
        wanted = min(len(buffer), self.size - self.pos)
        if wanted <= 0:
            return 0
        self.fh.seek(self.start + self.pos)
        got = self.fh.readinto(memoryview(buffer)[:wanted]) or 0
        self.pos += got
        return got


class _Ranged(_Positioned):
    """A remote file (S3, HTTP, ...) read as a seekable file, each read one ranged read."""

    def __init__(self, path):
        super().__init__(storage.size(path))
        self.path = path

    def readinto(self, buffer):
        if self.pos >= self.size:
            return 0
        data = storage.read_range(self.path, self.pos, min(len(buffer), self.size - self.pos))
        buffer[:len(data)] = data
        self.pos += len(data)
        return len(data)


def seekable(fh, path):
    """``fh`` (opened on ``path``) if it seeks, else ``path`` read by ranged reads."""
    if fh.seekable():
        return fh
    return io.BufferedReader(_Ranged(path), READ_SIZE)


def open_entry(fh, entry):
    """The bytes of ``entry`` of the WACZ open as ``fh`` (seekable), as a file."""
    return io.BufferedReader(_Window(fh, entry.start, entry.size), READ_SIZE)


def _refused(path, info, why):
    return RecordError(path, info.header_offset, f"entry {info.filename} not read: {why}")


def archive_entries(fh, path):
    """``(entries, problems)`` of the WACZ open as the seekable ``fh``: the ``Entry`` of each
    WARC/ARC file in ``archive/`` that is read in place, in the order of the ZIP, and a
    ``RecordError`` for each that is not (naming it, why, and how to fix it). Raises
    ``ArchiveError`` for a file that is no readable ZIP, or holds no ``archive/`` entry."""
    try:
        with zipfile.ZipFile(fh) as zf:  # (closing it leaves fh open)
            infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise ArchiveError(path, 0, f"starts like a ZIP file (a WACZ) but its central directory "
                                    f"cannot be read ({exc}): the file may be cut short, or no "
                                    "ZIP file") from None
    infos = [i for i in infos if i.filename.startswith(ARCHIVE_DIR) and not i.is_dir()]
    if not infos:
        raise ArchiveError(path, 0, f"a ZIP file without {ARCHIVE_DIR} entries: not a WACZ "
                                    "(a WACZ keeps its WARC files in archive/)")
    size = fh.seek(0, io.SEEK_END)
    entries, problems = [], []
    for info in sorted(infos, key=lambda i: i.header_offset):
        if info.flag_bits & 0x1:
            problems.append(_refused(path, info, "it is encrypted (records cannot be read in "
                                                 f"place); {HOW_TO_FIX}"))
            continue
        if info.compress_type != zipfile.ZIP_STORED:
            problems.append(_refused(path, info, f"it is compressed in the ZIP (method "
                                                 f"{info.compress_type}), so its records are not "
                                                 f"bytes of the WACZ a CDX line can point at; "
                                                 f"{HOW_TO_FIX}"))
            continue
        fh.seek(info.header_offset)
        header = fh.read(LOCAL_HEADER)
        if len(header) < LOCAL_HEADER or header[:4] != ZIP_MAGIC:
            problems.append(_refused(path, info, "no ZIP local header where the central "
                                                 "directory says it starts (a damaged ZIP)"))
            continue
        start = info.header_offset + LOCAL_HEADER + sum(_NAME_EXTRA.unpack(header[26:30]))
        if start + info.compress_size > size:
            problems.append(_refused(path, info, f"it ends {start + info.compress_size - size} "
                                                 "bytes past the end of the file (cut short)"))
            continue
        entry = Entry(info.filename, start, info.compress_size)
        if not entry.size:
            continue
        with open_entry(fh, entry) as window:
            kind = compression(window.peek(4)[:4])
        if kind == "zst":
            problems.append(_refused(path, info, "a .warc.zst: its records' dictionary is at "
                                                 "the start of the entry, not of the WACZ, and "
                                                 "pywb does not read zstd; make it a .warc.gz "
                                                 "(webarchive-index recompress X.warc.zst -o "
                                                 "X.warc.gz) and pack the WACZ again"))
            continue
        if kind == "zip":
            problems.append(_refused(path, info, "a ZIP file inside the WACZ: unpack it, and "
                                                 "give the WACZ files inside as inputs"))
            continue
        entries.append(entry)
    return entries, problems


def in_wacz(item, path, entry):
    """An item of the walk of ``entry`` (its offsets in the entry) made one of the WACZ
    ``path``: a ``Record`` an ``EntryRecord`` at its offset in the WACZ, a problem at its
    offset in the WACZ naming the entry (and the offset in it)."""
    if isinstance(item, Record):
        return EntryRecord(item.record, entry.start + item.offset, item.length,
                           item.payload_sha1, item.notes, entry.name)
    if isinstance(item, ArchiveError):  # the end of an entry's walk is not the WACZ's
        return RecordError(path, entry.start + item.offset,
                           f"in entry {entry.name} (its offset {item.offset}): {item.reason}")
    return item
