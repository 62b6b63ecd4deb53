"""Index inputs of ``build`` made ready for its jobs (mrjob's runners, Spark).

What goes into the cluster of an index input is the lines its source gives
(``inputs.indexes``: well-formed, UTF-8, trailing ``\\r`` dropped), whatever the engine.
The sample and cluster jobs read CDX files with their own line readers, which keep
every line starting like a CDX line (``cdxline.is_cdx_line``), decode other bytes than
UTF-8 as latin-1, and sort every line themselves. A flat CDX file therefore goes to
them as it is only when those readers get exactly the source's lines from it: no
malformed line (so no line that is not UTF-8), and either plain or one gzip member
with a name ending in ``.gz`` (mrjob's inline and local runners pick decompression by
the name and read only the first member of a gzip file). Anything else is rewritten
first, the source's lines in order as one gzip member, into
``OUTDIR/rewritten-indexes/NNNNN-<name>.cdx.gz`` (numbered by input, so names never
collide): clusters, legacy indexes, files of several gzip members, files whose lines the
source changes (a byte order mark left out, converted to the cluster's format, re-keyed
with ``--rekey``) and, with ``--on-error skip``, files with malformed lines. So every
engine gets the same lines, converted once, here. With ``--on-error fail`` a malformed
line fails the build before anything is sampled, as an unreadable archive does.

That directory is cleared at each build, so it is marked as the tool's (``WORK_MARK``
in it): one without the mark (a user's) is never cleared nor written into, and an index
input inside it is refused (it would be deleted before it is read). ``OUTDIR/indexes/``,
where pywb's collections keep their indexes, is not touched.
"""
import gzip
import re

from .. import storage
from ..inputs.indexes import IndexInputError
from ..inputs.sources import open_index
from ..inputs.discovery import InputError
from ..options import UsageError

INDEXES_DIR = "rewritten-indexes"
# The file that marks INDEXES_DIR as made by a build (what it says is for a person)
WORK_MARK = ".webarchive-index-work"
# What a rewritten file's name drops of its source's name
INDEX_SUFFIX = re.compile(r"(\.cdxj?)?(\.gz)?\Z|\.(idx|summary)\Z")


def cluster_format(sources, requested=None):
    """The format of a cluster of ``sources`` (and of the archives indexed beside them):
    ``requested`` (``--cdx-format``), the sources of other formats converted to it
    (``target``; CDX9 to nothing else: it has no record length); else theirs, which must
    be one. Legacy indexes take the format chosen."""
    found = {}
    for source in sources:
        if source.kind != "legacy":
            found.setdefault(source.format, source.path)
    if len(found) > 1 and not requested:
        raise InputError("one cluster holds one CDX format, but the index inputs mix "
                         + ", ".join(f"{fmt} ({path}...)" for fmt, path in found.items())
                         + ": convert them to one with --cdx-format (cdxj, cdx11 or cdx9), "
                         "or build a cluster of each")
    fmt = requested or next(iter(found), "cdxj")
    if fmt != "cdx9" and "cdx9" in found:
        raise InputError(f"--cdx-format {fmt}, but the index input {found['cdx9']} is cdx9, which "
                         f"has no record length for {fmt} lines: build it as cdx9 "
                         "(--cdx-format cdx9)")
    for source in sources:
        if source.kind == "legacy":
            source.format = fmt
        elif source.format != fmt:
            source.target = fmt
    return fmt


def open_sources(indexes, requested=None, legacy_prefix=b"", rekey=False):
    """``(sources, errors, format)`` of ``discovery.Index`` items: the ones that open (their
    URL keys made SURT keys with ``rekey``), the problems of those that do not (dicts:
    file, line, reason), the cluster's format. InputError when their formats differ and
    none is requested (see ``cluster_format``)."""
    sources, errors = [], []
    for index in indexes:
        try:
            source = open_index(index.path, index.name, index.kind, rekey)
        except IndexInputError as exc:
            errors.append(exc.as_dict())
            continue
        if source.kind == "legacy":
            source.prefix = legacy_prefix
        sources.append(source)
    return sources, errors, cluster_format(sources, requested)


def as_is(source):
    """Whether the jobs' line readers get exactly the lines of ``source`` (read once) from
    its file as it is."""
    gzipped = source.path.endswith(".gz")
    return source.kind == "cdx" and not (source.malformed or source.notes or source.rekey
                                         or source.target) and (
        (source.members == 0 and not gzipped) or (source.members == 1 and gzipped))


def _rewrite(source, target):
    """Write the well-formed lines of ``source`` to ``target`` as one gzip member; the
    error that stopped the reading, if one did (the lines before it are written)."""
    with storage.open_atomic(target) as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as out:
            try:
                source.write(out)
            except (IndexInputError, OSError) as exc:
                if storage.of_environment(exc):
                    raise
                return exc
    return None


def _problem(source, exc):
    if isinstance(exc, IndexInputError):
        return exc.as_dict()
    return {"file": source.path, "line": 0, "reason": f"cannot read: {exc}"}


def prepare(sources, out_dir, on_error="fail", done=None):
    """``(files, errors, warnings, lines)``: the CDX files the jobs read for ``sources``
    (each read once, rewritten where needed), the problems met (malformed lines; a
    source that could not be read on), notes on unsorted sources, and the lines the
    files hold. ``done`` (a list) gets one item per source finished, for progress."""
    work = _clear_work(sources, out_dir)
    files, errors, warnings, lines = [], [], [], 0
    for number, source in enumerate(sources):
        stem = INDEX_SUFFIX.sub("", storage.safe_path(source.name.rsplit("/", 1)[-1]))
        target = storage.below(work, f"{number:05d}-{stem}.cdx.gz")
        failed = None
        if source.kind == "cdx":
            try:
                for _ in source.chunks():
                    pass
            except (IndexInputError, OSError) as exc:
                if storage.of_environment(exc):
                    raise  # the machine's failure (too many open files...), no input's
                failed = exc
        if failed is None and as_is(source):
            files.append(source.path)
        elif on_error == "skip" or (failed is None and not source.malformed):
            # (with --on-error fail a flat file with problems is not rewritten: the build
            # stops.) A second reading of a flat file meets its failure again: reported once
            failed = _rewrite(source, target) or failed
            files.append(target)
        found = report(source, failed)
        errors += found[0]
        warnings += found[1]
        lines += source.lines_read
        if done is not None:
            done.append(source.path)
    return files, errors, warnings, lines


def check_work(sources, out_dir):
    """Whether the directory for rewrites of ``sources`` in ``out_dir`` is the tool's
    (marked, or not there); ``UsageError`` if it is not, or holds one of ``sources``."""
    work = storage.join(out_dir, INDEXES_DIR)
    inside = [s.path for s in sources if s.path.startswith(work.rstrip("/") + "/")]
    if inside:
        raise UsageError(f"{inside[0]} is in {work}, which the build clears for its own "
                         "rewrites of index inputs: give the index it was made from, or "
                         "move it out of there")
    if storage.exists(storage.join(work, WORK_MARK)):
        return True
    if next(iter(storage.list_files(work)), None) is not None:
        raise UsageError(f"{work} holds files that webarchive-index did not write, and a "
                         "build with index inputs writes its rewrites there: move them, or "
                         "give another OUTDIR")
    return False


def _clear_work(sources, out_dir):
    """The directory for rewrites of ``sources`` in ``out_dir``, emptied of an earlier
    build's and marked as the tool's (see ``check_work``)."""
    work = storage.join(out_dir, INDEXES_DIR)
    if check_work(sources, out_dir):
        storage.remove_tree(work)  # the rewrites of an earlier build
    storage.write_atomic(storage.join(work, WORK_MARK),
                         b"webarchive-index build: rewrites of index inputs; cleared at each "
                         b"build\n")
    return work


def report(source, failed=None):
    """``(errors, warnings)`` of ``source`` once read whole (or until ``failed``, what
    stopped the reading): its malformed lines, and a note if it is not sorted."""
    errors = list(source.problems)
    if source.malformed > len(source.problems):
        errors.append({"file": source.path, "line": 0, "reason":
                       f"{source.malformed - len(source.problems)} more malformed lines"})
    if failed is not None:
        errors.append(_problem(source, failed))
    warnings = list(source.notes)
    if source.unsorted and not source.rekey:  # (new keys sort otherwise: no news)
        warnings.append({"file": source.unsorted["file"], "line": source.unsorted["line"],
                         "message": "not sorted: this line sorts before the one above it "
                                    "(the build sorts every line)"})
    return errors, warnings
