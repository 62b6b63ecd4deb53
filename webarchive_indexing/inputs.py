"""Which archive files an indexing run reads, and the name each one gets in the index.

INPUT arguments may be archive files, directories (searched recursively),
glob patterns and manifest files (one path per line, as the original jobs
took them; ``#`` starts a comment; relative lines are relative to the
manifest). An ``s3://`` INPUT is an archive or a manifest if its name ends like
one, else a prefix to list like a directory (``s3://bucket/crawl/``); globs are
local only. Each archive gets a *name*: the ``filename`` field of its CDX lines
and the path of its CDX file under the output directory.

* under a directory input (or a manifest's directory, or an ``--input-root``):
  the path relative to that root, e.g. ``crawl/a.warc.gz``;
* otherwise the file's base name.

    >>> relative_name("/data/crawl/seg1/a.warc.gz", ["/data/crawl"])
    'seg1/a.warc.gz'
"""
import glob
import gzip
import io
import os
from collections import namedtuple

from . import storage

ARCHIVE_EXTENSIONS = (".warc.gz", ".warc", ".arc.gz", ".arc")
# Common Crawl publishes its file lists as warc.paths.gz
MANIFEST_EXTENSIONS = (".paths", ".paths.gz", ".txt", ".lst", ".manifest")
ARCHIVE_MAGIC = (b"\x1f\x8b", b"WARC/", b"filedesc://")


# An archive to index: its path, its name in the index (``relative_name``), and the root
# that name is relative to (None for a base name)
Archive = namedtuple("Archive", "path name root", defaults=(None,))


class InputError(ValueError):
    pass


def relative_name(path, roots):
    """The name of ``path`` in the index: relative to the longest root holding it, else its base name."""
    return _name_under(path, _holding_root(path, roots))


def _name_under(path, root):
    return path[len(root.rstrip("/")) + 1:] if root else path.rsplit("/", 1)[-1]


def _holding_root(path, roots):
    """The longest of ``roots`` that holds ``path``, or None."""
    best = None
    for root in roots:
        prefix = root.rstrip("/") + "/"
        if path.startswith(prefix) and (best is None or len(prefix) > len(best.rstrip("/")) + 1):
            best = root
    return best


def cdx_name(name):
    """The CDX file for an archive name: ``a/b/x.warc.gz`` -> ``a/b/x.cdx.gz``."""
    for ext in ARCHIVE_EXTENSIONS:
        if name.endswith(ext):
            return name[:-len(ext)] + ".cdx.gz"
    return name + ".cdx.gz"


def _is_archive(path):
    if path.endswith(ARCHIVE_EXTENSIONS):
        return True
    if path.endswith(MANIFEST_EXTENSIONS):
        return False
    with open(path, "rb") as fh:
        return fh.read(16).startswith(ARCHIVE_MAGIC)


def read_manifest(path):
    """Archive paths listed in a manifest file (plain or gzipped, local or on S3), made absolute."""
    base = storage.dirname(storage.abspath(path))
    paths = []
    with storage.open_read(path) as raw:
        text = (gzip.open(raw, "rt", encoding="utf-8") if path.endswith(".gz")
                else io.TextIOWrapper(raw, "utf-8"))
        for line in text:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if storage.is_local(line):
                line = storage.resolve(base, line)
            paths.append(line)
    return base, paths


def _walk(directory):
    return [path for path in storage.list_files(directory) if path.endswith(ARCHIVE_EXTENSIONS)]


def _expand_remote(url, roots):
    """The archives a URI INPUT names: itself, those its manifest lists, or those under it."""
    if url.endswith(ARCHIVE_EXTENSIONS):
        return [url]
    if url.endswith(MANIFEST_EXTENSIONS):
        base, listed = read_manifest(url)
        roots.append(base)
        return listed
    roots.append(url.rstrip("/"))
    return _walk(url)


def expand(inputs, roots=()):
    """(archives, missing, roots) for the INPUT arguments, in a stable order.

    ``missing`` lists inputs that name nothing; the caller decides whether
    that is fatal. Raises InputError when two archives would get the same name.
    """
    roots = [storage.abspath(r) for r in roots]
    paths, missing = [], []
    for item in inputs:
        if not storage.is_local(item):
            try:
                found = _expand_remote(item, roots)
            except FileNotFoundError:  # no such manifest or bucket
                found = []
            except OSError as exc:
                raise InputError(f"cannot read {item}: {exc}") from exc
            if not found:
                missing.append(item)
            paths.extend(found)
            continue
        matches = [item] if os.path.exists(item) else sorted(glob.glob(item, recursive=True))
        if not matches:
            missing.append(item)
        for match in matches:
            match = os.path.abspath(match)
            if os.path.isdir(match):
                roots.append(match)
                paths.extend(_walk(match))
            elif _is_archive(match):
                paths.append(match)
            else:
                base, listed = read_manifest(match)
                roots.append(base)
                for path in listed:
                    if not storage.is_local(path) or os.path.exists(path):
                        paths.append(path)
                    else:
                        missing.append(path)
    archives, seen = [], {}
    for path in dict.fromkeys(paths):
        root = _holding_root(path, roots)
        archive = Archive(path, _name_under(path, root), root)
        target = cdx_name(archive.name)
        other = seen.setdefault(target, archive.path)
        if other != archive.path:
            raise InputError(f"{other} and {archive.path} would both be indexed into {target!r}: "
                             "pass their common parent directory instead, use --input-root, "
                             "or rename one")
        archives.append(archive)
    return archives, missing, roots
