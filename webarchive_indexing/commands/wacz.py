"""``webarchive-index wacz``: WARC files packed into a WACZ 1.1.1 package, its index made by
our own cluster writer.

    archive/NAME                  each WARC as it is, stored (not compressed again), so that a
                                  record is a byte range of the package
    indexes/index.cdx.gz          the captures' CDXJ lines in gzip blocks (stored)
    indexes/index.idx             one line per block: cdxj-gzip-1.0 (``zipnum/waczindex.py``)
    pages/pages.jsonl             the pages: HTML captures answered 2xx, each URL once, with
                                  their <title> (``warc/pagetitle.py``)
    datapackage.json              every file with its SHA-256 and size
    datapackage-digest.json       the SHA-256 of datapackage.json

The archives are indexed and their lines sorted by ``build`` (any engine: a one-shard
cluster in a work directory beside the output, removed at the end), then streamed once into
the package's blocks and pages; each WARC is copied in pieces while it is hashed. Memory does
not grow with the size of the archives (neither holds more than a block or a piece).

Of a cluster (its directory, a build's output or its ``cluster.idx``), nothing is indexed
again: its lines go into the package as they are (their ``filename`` the name of the
package's ``archive/`` entry), and the WARC files they name are found below
``--warc-prefix``, as ``copy`` finds them (``copy.fetch.source_path``: ``storage.below``).
"""
import contextlib
import datetime
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from collections import deque, namedtuple
from dataclasses import dataclass, field

from .. import storage
from ..cdx.cdxline import fields_of
from ..copy.fetch import Failed, check_prefix, source_path
from ..inputs.discovery import InputError, check_output, expand_named
from ..zipnum.places import cluster_index
from ..inputs.sources import open_index
from ..options import ENGINE, BuildOptions, UsageError
from ..util.progress import Progress, human
from ..warc.magic import compression
from ..warc.pagetitle import titles
from ..util.workers import process_pool, watching
from ..zipnum import layout, waczindex
from .build import build

WACZ_VERSION = "1.1.1"
# What WACZ readers replay: WARC files (ReplayWeb.page reads neither ARC nor .warc.zst)
WACZ_ARCHIVES = (".warc.gz", ".warc")
PIECE = 1 << 20
PAGE_MIMES = ("text/html", "application/xhtml+xml")


@dataclass
class WaczSummary:
    output: str
    archives: int = 0
    archive_bytes: int = 0
    lines: int = 0
    blocks: int = 0
    pages: int = 0
    bytes: int = 0
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    def describe(self):
        return (f"wrote {self.output}: {human(self.bytes)}; {self.archives} WARC files "
                f"({human(self.archive_bytes)}), {self.lines} index lines in {self.blocks} "
                f"blocks, {self.pages} pages")


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


class _Hashing:
    """A file object written through, counting and hashing what goes into it."""

    def __init__(self, fh):
        self.fh, self.sha256, self.size = fh, hashlib.sha256(), 0

    def write(self, data):
        self.sha256.update(data)
        self.size += len(data)
        return self.fh.write(data)

    def resource(self, path):
        return {"name": os.path.basename(path).lower(), "path": path,
                "hash": "sha256:" + self.sha256.hexdigest(), "bytes": self.size}


class _Package:
    """The ZIP being written: each entry streamed, its hash and size kept for the
    datapackage."""

    def __init__(self, fh, when):
        self.zip = zipfile.ZipFile(fh, "w", allowZip64=True)
        self.when = when.timetuple()[:6]
        self.resources = []

    def entry(self, path, stored=True, size=0):
        info = zipfile.ZipInfo(path, self.when)
        info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
        return _Entry(self, self.zip.open(info, "w", force_zip64=size >= zipfile.ZIP64_LIMIT),
                      path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # also after a failure (the entry written is closed by then): the file is discarded
        self.zip.close()


class _Entry(_Hashing):
    def __init__(self, package, fh, path):
        super().__init__(fh)
        self.package, self.path = package, path

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()
        if exc[0] is None:
            self.package.resources.append(self.resource(self.path))


def _archives(inputs, output, options):
    """``(archives, cluster)``: the WARC files to pack, each with its ``name`` (the filename
    of its lines, its entry under ``archive/``) and ``path``, and the index source of the
    cluster whose lines are packed with their number, or None when the archives are to be
    indexed."""
    found = expand_named(inputs, options.input_root, [output])
    clusters = [index for index in found.indexes if index.kind == "cluster"]
    if clusters and (len(inputs) > 1 or len(found.indexes) > 1):
        raise InputError(f"{clusters[0].path} is a cluster: a WACZ is packed of one cluster "
                         "(its lines taken as they are) or of WARC files, not of both")
    if clusters:
        return _cluster_archives(clusters[0].path, options)
    if found.indexes:
        raise InputError(f"{found.indexes[0].path} is an index: a WACZ packs WARC files, and "
                         "its index is made from them (or is a cluster's)")
    if found.missing:
        raise InputError(f"no such file: {', '.join(found.missing)} (nothing was written)")
    if options.warc_prefix:
        raise UsageError("--warc-prefix says where the WARC files of a cluster are: give it "
                         "with a cluster, not with WARC files")
    wrong = [a.path for a in found.archives if not a.name.endswith(WACZ_ARCHIVES)]
    if wrong:
        raise InputError(f"{wrong[0]}: a WACZ holds WARC files ({', '.join(WACZ_ARCHIVES)}), "
                         "which its readers replay; make one first (a .warc.zst: "
                         "`webarchive-index recompress FILE -o DIR --output-format gz`)")
    return found.archives, None


def _cluster_archives(idx, options):
    """The WARC files the lines of the cluster ``idx`` name, found below --warc-prefix, each
    checked to be there and a WARC file; and the cluster's lines, as CDXJ."""
    prefix = options.warc_prefix
    if not prefix:
        raise UsageError(f"{idx} is a cluster: say where the WARC files its lines name are "
                         "with --warc-prefix DIR (the directory it was built of, as for copy)")
    check_prefix(prefix)
    source = open_index(idx, kind="cluster")
    source.target = "cdxj"  # what a WACZ's index holds, whatever the cluster's format
    archives, lines = {}, 0
    for chunk in source.chunks():
        lines += len(chunk)
        for line in chunk:
            name = fields_of(line)["filename"]
            if name not in archives:
                archives[name] = _cluster_archive(idx, name, prefix)
    if not archives:
        raise InputError(f"{idx}: the cluster holds no lines, so no package of it")
    return list(archives.values()), (source, lines)


def _cluster_archive(idx, name, prefix):
    if not name.endswith(WACZ_ARCHIVES):
        raise InputError(f"{idx}: its lines name {name}, which is no WARC file "
                         f"({', '.join(WACZ_ARCHIVES)}): a WACZ holds WARC files, and a "
                         "cluster's lines are packed as they are; pack the WARC files instead")
    try:
        path = source_path(prefix, name)
    except Failed as exc:
        raise InputError(f"{idx}: {exc}") from None
    try:
        head = storage.read_range(path, 0, 8)
    except FileNotFoundError:
        raise InputError(f"{idx}: its lines name {name}, which is not in --warc-prefix "
                         f"{prefix} ({path}): give the directory the cluster was built "
                         "of") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    if compression(head) != "gz" and not head.startswith(b"WARC/"):
        raise InputError(f"{path}: does not start as a WARC file (.warc.gz or .warc) does, "
                         "yet the cluster's lines name it")
    return _Archive(name, path)


_Archive = namedtuple("_Archive", "name path")


def _page(line):
    """The page of a CDXJ line, and its fields: an HTML capture answered 2xx; else None."""
    fields = fields_of(line)
    if fields.get("mime") not in PAGE_MIMES or not str(fields.get("status", "")).startswith("2"):
        return None
    ts = fields["timestamp"]
    when = f"{ts[0:4]}-{ts[4:6]}-{ts[6:8]}T{ts[8:10]}:{ts[10:12]}:{ts[12:14]}Z"
    return {"id": hashlib.sha1(f"{ts} {fields['url']}".encode()).hexdigest()[:22],
            "url": fields["url"], "ts": when}, fields


class _Titles:
    """The pages, written in order to ``out`` with their titles, read by a pool of
    ``workers`` processes ``BATCH`` pages a task (a title costs a ranged read and a
    record parsed: some 100 µs, as much as the rest of packing), at most ``2 * workers``
    tasks waiting (memory bounded); without ``paths`` (no titles) written at once."""
    BATCH = 512

    def __init__(self, out, paths, workers):
        self.out, self.paths, self.batch, self.waiting = out, paths, [], deque()
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.pool = process_pool(self.workers) if paths else None

    def add(self, page, fields):
        path = self.paths.get(fields.get("filename"))
        if path and fields.get("offset", "").isdigit() and fields.get("length", "").isdigit():
            self.batch.append((page, (path, int(fields["offset"]), int(fields["length"]))))
        else:
            self.batch.append((page, None))
        if len(self.batch) >= self.BATCH:
            self._submit()

    def _submit(self):
        batch, self.batch = self.batch, []
        records = [record for _, record in batch if record]
        with watching(self.pool) if self.pool else contextlib.nullcontext():
            self.waiting.append((batch, self.pool.submit(titles, records) if records and self.pool
                                 else None))
            while len(self.waiting) > 2 * self.workers:
                self._write()

    def _write(self):
        batch, task = self.waiting.popleft()
        found = iter(task.result() if task else ())
        for page, record in batch:
            if record and (title := next(found)):
                page["title"] = title
            self.out.write(json.dumps(page).encode() + b"\n")

    def close(self):
        """Write what is left; the pool ended."""
        try:
            if self.batch:
                self._submit()
            with watching(self.pool) if self.pool else contextlib.nullcontext():
                while self.waiting:
                    self._write()
        finally:
            if self.pool:
                self.pool.shutdown(cancel_futures=True)


def _index(package, source, lines_per_block, summary, paths, workers=None):
    """The lines of the index ``source`` into ``indexes/index.cdx.gz`` (and ``index.idx``)
    and the pages (titled from the archives ``paths`` by filename), counted in
    ``summary``."""
    # a ZIP takes one entry at a time: the pages wait in a file until the index is in
    with tempfile.TemporaryFile() as page_file:
        page_file.write(json.dumps({"format": "json-pages-1.0", "id": "pages",
                                    "title": "All Pages"}).encode() + b"\n")
        with package.entry("indexes/" + waczindex.DATA_NAME) as data:
            writer = layout.ShardWriter(data, waczindex.DATA_NAME, lines_per_block,
                                        index_line=waczindex.index_line)
            last_key = None  # the lines come sorted: a URL's captures are together
            pages = _Titles(page_file, paths, workers)
            try:
                for chunk in source.chunks():
                    for line in chunk:
                        writer.add(line + b"\n")
                        page = _page(line)
                        key = line.split(b" ", 1)[0]
                        if page and key != last_key:
                            last_key = key
                            pages.add(*page)
                            summary.pages += 1
                    summary.lines += len(chunk)
            finally:
                pages.close()
            index = writer.close()
        summary.blocks = writer.blocks
        with package.entry("indexes/index.idx", stored=False) as idx:
            idx.write(waczindex.meta_line() + index)
        page_file.seek(0)
        with package.entry("pages/pages.jsonl", stored=False) as pages:
            while piece := page_file.read(PIECE):
                pages.write(piece)


def _copy_archive(package, archive, summary):
    size = storage.size(archive.path)
    with package.entry("archive/" + archive.name, size=size) as entry, \
            storage.open_read(archive.path) as source:
        while piece := source.read(PIECE):
            entry.write(piece)
            summary.archive_bytes += len(piece)


def _built(inputs, work, options, summary):
    """The one-shard cluster of the archives ``inputs`` name, built in ``work``, and its
    number of lines; its problems in ``summary``."""
    # the same INPUTs as named here: the lines' filenames are the archives' names
    built = build(inputs, work, BuildOptions(
        shards=1, on_error=options.on_error, input_root=options.input_root,
        progress=options.progress, skip_existing=False,
        # POST and PUT captures under the keys ReplayWeb.page looks them up by
        post_append=True,
        **{option.dest: getattr(options, option.dest) for option in ENGINE}))
    summary.errors, summary.warnings = built.errors, built.warnings
    return open_index(cluster_index(built.cluster_dir)), built.lines


def pack(inputs, output, options):
    """Pack the WARC files ``inputs`` name (or those of the cluster it names) into the
    WACZ ``output`` (``WaczOptions``); a ``WaczSummary``. ``InputError`` / ``UsageError``
    before anything is written; a build that fails raises as ``build`` does, and no
    package is written."""
    if not output.endswith(".wacz"):
        raise UsageError(f"-o {output}: a WACZ package's name ends in .wacz")
    if not storage.is_local(output):
        raise UsageError(f"-o {output}: a WACZ is written to a local file (copy it to its "
                         "place afterwards)")
    check_output(output, inputs)
    archives, cluster = _archives(inputs, output, options)
    summary = WaczSummary(output, archives=len(archives))
    when = _now()
    work = tempfile.mkdtemp(prefix=".wacz-", dir=os.path.dirname(os.path.abspath(output)))
    progress = Progress(enabled=options.progress)
    try:
        if cluster is None:
            cluster = _built(inputs, work, options, summary)
        source, lines = cluster
        total = sum(storage.size(a.path) for a in archives)
        progress.transfer(f"packing {output}", lambda: (summary.lines, summary.archive_bytes),
                          lines, total)
        with storage.open_atomic(output) as fh, _Package(fh, when) as package:
            _index(package, source, options.lines_per_block, summary,
                   {archive.name: archive.path for archive in archives}
                   if options.page_titles else {}, options.workers)
            for archive in archives:
                _copy_archive(package, archive, summary)
            datapackage = json.dumps({
                "profile": "data-package", "resources": package.resources,
                "created": when.strftime("%Y-%m-%dT%H:%M:%SZ"), "wacz_version": WACZ_VERSION,
                "software": "webarchive-indexing", **({"title": options.title}
                                                       if options.title else {}),
            }, indent=2).encode()
            package.zip.writestr(zipfile.ZipInfo("datapackage.json", package.when), datapackage,
                                 zipfile.ZIP_DEFLATED)
            digest = {"path": "datapackage.json",
                      "hash": "sha256:" + hashlib.sha256(datapackage).hexdigest()}
            package.zip.writestr(zipfile.ZipInfo("datapackage-digest.json", package.when),
                                 json.dumps(digest, indent=2).encode(), zipfile.ZIP_DEFLATED)
    finally:
        progress.done()
        shutil.rmtree(work, ignore_errors=True)
    summary.bytes = os.path.getsize(output)
    return summary
