"""The work of one task of each job, shared by the MRJob jobs and the command line.

* ``index_archive``: one WARC/ARC file -> its sorted ``.cdx.gz``;
* ``write_splits``: the sampled split points -> ``splits.txt`` and ``splits.seq``;
* ``write_shard``: the sorted lines of one shard -> ``cdx-NNNNN.gz`` and ``part-NNNNN``
  (and the shard's files of a columnar table);
* ``write_shard_table``: a shard written -> its files of a columnar table;
* ``finalize_cluster``: every shard checked -> ``cluster.loc``, ``cluster.root``, then ``cluster.idx``.

Each writes through ``storage``, so an output either exists whole or not at all.
"""
import contextlib
import io
import json
from dataclasses import dataclass, field

from isal import igzip

from ..cdx import cdxline, cdxmeta, indexer, splits
from . import seqfile
from .. import options, storage
from ..zipnum import layout
from ..inputs.discovery import cdx_name
from ..util.wire import Wire, option_field
from ..inputs.indexes import CdxFile

ERRORS_SUFFIX = ".errors.json"
# The deflate level of each archive's .cdx.gz, with ISA-L: 2 deflates a 1.4 MB CDX in 2 ms,
# 11x faster than zlib's level 6 (4% of a cdx -o), for a file 12% larger that gzip and zcat
# read alike; the same bytes from every engine (one ISA-L version, mtime 0)
CDX_GZIP_LEVEL = 2


class IndexingFailed(Exception):
    """An archive could not be fully indexed and the run was told to fail on that."""

    def __init__(self, errors):
        self.errors = errors
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        super().__init__(f"{errors[0]}{more}")


@dataclass(frozen=True)
class Indexing(Wire):
    """How each archive is indexed (``index_archive``): what ``build`` and ``cdx`` make
    from their options (``Indexing.of(options)``), every engine hands its index tasks as it
    is, and the index job takes as its options (``command_line``, ``parsed``)."""
    cdx_format: str = option_field(options.CDX_FORMAT)
    cdx_fields: str = option_field(options.CDX_FIELDS)
    skip_existing: bool = option_field(options.SKIP_EXISTING)
    on_error: str = option_field(options.ON_ERROR)
    # the dictionary file (absolute) of .warc.zst archives without their own
    zstd_dictionary: str = option_field(options.ZSTD_DICTIONARY)
    # every zstd frame decompressed and checked, payloads too
    zstd_verify: bool = option_field(options.ZSTD_VERIFY)
    # POST and PUT captures keyed with their method and body, as pywb keys them
    post_append: bool = option_field(options.POST_APPEND)
    # a WACZ's own index taken where its hashes check out
    trust_wacz_index: bool = option_field(options.TRUST_WACZ_INDEX)

    def __post_init__(self):
        # build's option is None until an update takes its cluster's: not asked is off
        object.__setattr__(self, "post_append", bool(self.post_append))


@dataclass
class IndexStatus(Wire):
    """What indexing one archive did (``index_archive``)."""
    name: str
    path: str
    cdx: str
    skipped: bool = False
    stale: str = None      # why its CDX file was made again (``cdxmeta.stale``)
    source: dict = None    # what its CDX file was made from (``cdxmeta.source_of``)
    records: int = 0
    lines: int = 0
    bytes: int = 0
    errors: list = field(default_factory=list)     # problems, as dicts
    warnings: list = field(default_factory=list)


def index_archive(path, name, cdx_dir, settings=Indexing(), sample_size=0):
    """Index one archive into ``cdx_dir/<name>.cdx.gz`` as ``settings`` (an ``Indexing``)
    say; return an ``IndexStatus``.

    With ``on_error="skip"`` the records read before and after a problem are
    written, and the problems are recorded
    beside the CDX file in ``.errors.json``, which also makes the next run with
    ``skip_existing`` index the file again instead of trusting a partial CDX.
    ``skip_existing`` keeps a CDX file only if its ``cdxmeta`` says that it was made
    in format ``cdx_format`` from the archive as it is now (else ``status.stale`` says why
    it was made again); ``status.source`` is what the CDX file was made from. The
    meta keeps a sample of ``sample_size`` lines. ``cdx_fields`` as ``indexer.index_file``
    takes it (a CDX file made with other fields is stale too), and ``post_append`` (so is
    one made the other way).
    """
    fmt, cdx_fields = settings.cdx_format, settings.cdx_fields
    # what the meta records as the CDX file's format: other fields make another CDX
    made_as = fmt if cdx_fields == "pywb" else f"{fmt} with --cdx-fields {cdx_fields}"
    if settings.post_append:
        made_as += " with --post-append"
    out = storage.join(cdx_dir, cdx_name(name))
    errors_out = out + ERRORS_SUFFIX
    status = IndexStatus(name, path, out)
    try:
        status.source = source = cdxmeta.source_of(path)
    except OSError:
        source = None  # indexing reports it
    if settings.skip_existing and storage.exists(out) and not storage.exists(errors_out):
        status.stale = cdxmeta.stale(cdxmeta.read(out), made_as, source)
        if status.stale is None:
            status.skipped = True
            return status
    result = indexer.index_file(path, name, fmt, cdx_fields=cdx_fields,
                                zstd_dictionary=settings.zstd_dictionary,
                                zstd_verify=settings.zstd_verify,
                                post_append=settings.post_append,
                                trust_wacz_index=settings.trust_wacz_index)
    if result.errors and settings.on_error == "fail":
        raise IndexingFailed(result.errors)
    status.records, status.lines, status.bytes = result.records, len(result.lines), _size(path)
    status.errors = [e.as_dict() for e in result.errors]
    status.warnings = result.warning_dicts()
    if result.errors:
        storage.write_atomic(errors_out, json.dumps(status.errors, indent=1).encode())
    text = cdxline.header_line(fmt) + "".join(result.lines)
    # the meta goes first and comes back last: a CDX file with one always matches it
    storage.remove(cdxmeta.meta_path(out))
    storage.write_atomic(out, igzip.compress(text.encode("utf-8"), CDX_GZIP_LEVEL, mtime=0))
    cdxmeta.write(out, cdxmeta.make(made_as, source, text, sample_size))
    if not result.errors:
        storage.remove(errors_out)
    return status


def _size(path):
    try:
        return storage.size(path)
    except OSError:
        return 0


def shard_key(shard):
    """The map output key of a line of shard ``shard`` in the cluster job."""
    return "%05d" % shard


def _seqfile(keys):
    data = io.BytesIO()
    seqfile.write_text_keys(data, keys)
    return data.getvalue()


def write_splits(split_lines, splits_dir):
    """Publish the split points: ``splits.txt``, the same as a Hadoop SequenceFile
    (``splits.seq``), and ``partitions.seq``, the shard-number boundaries with which
    Hadoop's TotalOrderPartitioner sends shard i to reducer i in the cluster job
    (whose map output keys are shard numbers)."""
    shard_bounds = [shard_key(i) for i in range(1, len(split_lines) + 1)]
    storage.write_atomic(storage.join(splits_dir, "splits.seq"), _seqfile(split_lines))
    storage.write_atomic(storage.join(splits_dir, "partitions.seq"), _seqfile(shard_bounds))
    storage.write_atomic(storage.join(splits_dir, "splits.txt"),
                         splits.format_splits(split_lines).encode("utf-8"))


def read_splits(splits_path):
    return splits.parse_splits(storage.read_bytes(splits_path).decode("utf-8"))


def write_shard(shard, lines, cluster_dir, lines_per_block=layout.LINES_PER_BLOCK, table=None,
                deflate=options.BLOCK_DEFLATE_OLD):
    """Write one shard from its sorted lines (str, no newline), its blocks compressed by
    ``deflate`` (of ``layout.DEFLATES``); return its stats.

    The shard file is published before its part file, so an index line never
    points at a shard that is not there. With ``table`` (a ``table.Table``) the
    same lines also become the shard's files of that table (their stats: ``"table"``).
    """
    name = layout.shard_name(shard)
    with contextlib.ExitStack() as stack:
        fh = stack.enter_context(storage.open_atomic(storage.join(cluster_dir, name)))
        writer = layout.ShardWriter(fh, name, lines_per_block, deflate=deflate)
        rows = None if table is None else stack.enter_context(table.shard(shard))
        for line in lines:
            writer.add(line.encode("utf-8") + b"\n")
            if rows is not None:
                rows.add(line)
        part = writer.close()
    storage.write_atomic(storage.join(cluster_dir, layout.part_name(shard)), part)
    stats = writer.stats(shard)
    if rows is not None:
        stats["table"] = rows.stats
    return stats


def write_shard_table(shard, cluster_dir, table):
    """Write the files of shard number ``shard`` of ``table`` (a ``table.Table``) from
    the lines of that shard as written in ``cluster_dir``; their stats. For engines whose
    shard tasks do not write the table themselves (``engines.Engine.write_tables``)."""
    path = storage.join(cluster_dir, layout.shard_name(shard))
    if not storage.size(path):  # a shard without lines: no rows, no files
        return table.write_chunks(shard, ())
    source = CdxFile(path)
    stats = table.write_chunks(shard, source.chunks())
    if source.malformed or source.unsorted:
        raise ClusterIncomplete(f"{path} is not the sorted shard that was written: "
                                f"{(source.problems or [source.unsorted])[0]}")
    return stats


class ClusterIncomplete(Exception):
    pass


def shards_dir(directory):
    """Where the shards of a cluster job's output are: ``directory``, or its ``cluster/``
    (``directory`` is then the output directory of the whole run)."""
    below = storage.join(directory, "cluster")
    if (not storage.exists(storage.join(directory, layout.part_name(0)))
            and storage.exists(storage.join(below, layout.part_name(0)))):
        return below
    return directory


def finalize_cluster(cluster_dir, shards, written=None, location=None, index_dir=None,
                     previous_loc=b"", root=True):
    """Check every shard and publish ``cluster.loc``, ``cluster.root`` and then ``cluster.idx``.

    ``written`` maps shard number -> stats for the shards the job reported; a
    shard it does not name received no lines and is written empty. Without
    ``written`` (a run on Hadoop, whose reducers write every shard, empty ones
    too) every shard must be there. A shard that is missing or disagrees with its
    part file raises ClusterIncomplete and nothing is published.
    ``index_dir`` is where ``cluster.loc`` and ``cluster.idx`` go, if not
    ``cluster_dir``; it must hold ``cluster_dir``, and they name each shard by its
    path relative to ``index_dir`` (``build-00001/cdx-00000.gz``), which is also how
    a reader without the .loc file finds it. ``cluster.loc`` gives that relative
    path as the shard's location (pywb and ``query`` resolve it against the .loc's
    directory, so the cluster can be moved), or, with ``location`` (an absolute path or
    URI: where readers find the shards), ``location/cdx-NNNNN.gz``. ``previous_loc`` (.loc lines) goes on
    being published after this cluster's own lines: those of the cluster.idx
    being replaced, which a reader may still pair with the new cluster.loc.
    ``root=False`` publishes no ``cluster.root`` (and removes an older one, which
    would describe another index); readers check a root against its index anyway.
    """
    index_dir = index_dir or cluster_dir
    if not (cluster_dir + "/").startswith(index_dir.rstrip("/") + "/"):
        raise ValueError(f"the shards in {cluster_dir} are not under {index_dir}, "
                         "where cluster.idx would name them")
    prefix = cluster_dir[len(index_dir.rstrip("/")):].strip("/")
    names = [storage.join(prefix, layout.shard_name(i)) if prefix else layout.shard_name(i)
             for i in range(shards)]
    parts, checked = [], []
    for shard in range(shards):
        shard_path = storage.join(cluster_dir, layout.shard_name(shard))
        part_path = storage.join(cluster_dir, layout.part_name(shard))
        stats = written.get(shard) if written is not None else None
        if written is not None and stats is None:
            stats = write_shard(shard, [], cluster_dir)
        try:
            # read, not asked about first: on S3 or HDFS each question is a request
            part, size = storage.read_bytes(part_path), storage.size(shard_path)
        except FileNotFoundError:
            raise ClusterIncomplete(f"shard {shard} is incomplete: {shard_path} or {part_path} "
                                    "is missing") from None
        try:
            end = layout.part_end(part)
        except layout.BadIdxLine as exc:
            raise ClusterIncomplete(f"{part_path}: not a part file: {exc}") from None
        if end != size or (stats is not None and end != stats["bytes"]):
            raise ClusterIncomplete(f"{shard_path} is {size} bytes but its index covers {end}"
                                    + (f" and the job wrote {stats['bytes']}" if stats else ""))
        parts.append(layout.with_shard(part, names[shard]) if prefix else part)
        checked.append(layout.shard_stats(shard, stats["lines"] if stats else 0,
                                          part.count(b"\n"), size))
    loc = b"".join(layout.loc_line(names[i], storage.join(location, layout.shard_name(i))
                                   if location else names[i])
                   for i in range(shards)) + previous_loc
    storage.write_atomic(storage.join(index_dir, "cluster.loc"), loc)
    idx = b"".join(layout.number_parts(parts))
    root_path = storage.join(index_dir, "cluster.root")
    if root:
        storage.write_atomic(root_path, layout.root_index(idx))
    else:
        storage.remove(root_path)
    storage.write_atomic(storage.join(index_dir, "cluster.idx"), idx)
    return layout.cluster_totals(shards, checked)
