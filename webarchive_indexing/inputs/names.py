"""What the name of an input file says it is (``kind_of``: an archive, a CDX file, a
ZipNum cluster, a 2012 URL index or a manifest; a local file named like none by its first
bytes), its stem, how a message shows a name and a piece of an input, and ``InputError``:
an input a command cannot take.
"""
import os
import zlib

from .. import storage
from ..warc.magic import ARCHIVE_STARTS, compression

ARCHIVE_EXTENSIONS = (".warc.gz", ".warc.zst", ".warc", ".arc.gz", ".arc", ".wacz")
# Common Crawl publishes its file lists as warc.paths.gz
MANIFEST_EXTENSIONS = (".paths", ".paths.gz", ".txt", ".lst", ".manifest")

INDEX_EXTENSIONS = (".cdx", ".cdxj", ".cdx.gz", ".cdxj.gz")
CLUSTER_EXTENSIONS = (".idx", ".summary")
# What marks a directory as a ZipNum cluster when a directory is searched
CLUSTER_INDEX = "cluster.idx"
# The 2012 Common Crawl URL index was published as url-index.<seconds>
LEGACY_PREFIX = "url-index."
# The most of a line of input an error message quotes
EXCERPT_MAX = 40


class InputError(ValueError):
    pass


def excerpt(data):
    """The start of ``data`` (bytes read from input), escaped and cut short, as a message
    quotes it."""
    return repr(bytes(data[:EXCERPT_MAX])) + ("..." if len(data) > EXCERPT_MAX else "")


def shown_name(path):
    """``path`` as a message can print it: bytes of a name that are not UTF-8 escaped."""
    return os.fsencode(path).decode("utf-8", "backslashreplace") if storage.is_local(path) else path


def archive_stem(name):
    """An archive name without its extension: ``a/b/x.warc.gz`` -> ``a/b/x``."""
    for ext in ARCHIVE_EXTENSIONS:
        if name.endswith(ext):
            return name[:-len(ext)]
    return name


def index_stem(name):
    """An index name without its extension: ``a/x.cdx.gz`` -> ``a/x``."""
    for ext in INDEX_EXTENSIONS:
        if name.endswith(ext):
            return name[:-len(ext)]
    return name


def kind_of(path):
    """"archive", "cdx", "cluster", "legacy" or "manifest" by the name of ``path``; a local
    file named like none, or like a manifest (``.txt``), by its first bytes, as a CDX file
    named ``.txt`` is an index; None for a remote one named like none."""
    name = path.rsplit("/", 1)[-1]
    if path.endswith(ARCHIVE_EXTENSIONS):
        return "archive"
    from ..zipnum.layout import shard_number  # (not needed to index an archive)
    # a shard (Common Crawl's cdx-NNNNN.gz) read alone is a flat gzipped CDX file
    if path.endswith(INDEX_EXTENSIONS) or shard_number(name) is not None:
        return "cdx"
    if path.endswith(CLUSTER_EXTENSIONS):
        return "cluster"
    if name.startswith(LEGACY_PREFIX):
        return "legacy"
    manifest_name = path.endswith(MANIFEST_EXTENSIONS)
    if not storage.is_local(path):
        return "manifest" if manifest_name else None
    return _sniff(path, manifest_name)


def _sniff(path, manifest_name=False):
    from .linecheck import looks_like_cdx
    from .legacy import looks_like_legacy
    with open(path, "rb") as fh:
        head = fh.read(4096)
        size = os.fstat(fh.fileno()).st_size
    if compression(head) == "gz":
        try:  # what the first bytes inflate to (a cut stream gives what it can)
            inflated = zlib.decompressobj(31).decompress(head)
        except zlib.error:
            inflated = b""
        if looks_like_cdx(inflated):
            return "cdx"
        return "manifest" if manifest_name else "archive"
    if head.startswith(ARCHIVE_STARTS):
        return "archive"
    if not manifest_name and looks_like_legacy(head, size):
        return "legacy"
    return "cdx" if looks_like_cdx(head) else "manifest"
