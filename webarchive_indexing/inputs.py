"""Which files a run reads (archives, and for ``build`` existing indexes), and the name each
archive gets in the index and under the output directory.

INPUT arguments may be files, directories (searched recursively), glob patterns and
manifest files (one path per line, as the original jobs took them; ``#`` starts a
comment; relative lines are relative to the manifest). An ``s3://`` INPUT is a file or
a manifest if its name ends like one, else a prefix to list like a directory
(``s3://bucket/crawl/``); globs are local only. Each file found is one of:

* an **archive** (``.warc.gz .warc.zst .warc .arc.gz .arc``, or a file that starts like one);
* an **index** (see ``indexinputs``): a flat CDX/CDXJ file (``.cdx .cdxj .cdx.gz
  .cdxj.gz``, Common Crawl's ``cdx-NNNNN.gz``, or a file whose first line is a CDX
  line); a ZipNum cluster (its ``cluster.idx``, any ``.idx``/``.summary``, or a
  directory holding ``cluster.idx``, or ``cluster/cluster.idx`` and ``archives.txt``
  as a build's output does: then nothing else below that directory is read);
  or the 2012 Common Crawl URL index (``legacyindex``; named ``url-index.*``, or a
  local file that starts like one).

Each archive gets a *name*: the ``filename`` field of its CDX lines.

* under a directory input (or a manifest's directory, or an ``--input-root``):
  the path relative to that root, e.g. ``crawl/a.warc.gz``;
* otherwise the file's base name.

    >>> relative_name("/data/crawl/seg1/a.warc.gz", ["/data/crawl"])
    'seg1/a.warc.gz'

A name is kept as it is in the ``filename`` field, whatever it holds (an S3 key may
hold ``..``); the CDX file's path under the output directory is made from it by
``cdx_name``, which never leaves that directory (``safe_path``).
"""
import glob
import gzip
import io
import os
import re
import zlib
from collections import namedtuple

from . import storage
from .magic import ARCHIVE_STARTS, compression

ARCHIVE_EXTENSIONS = (".warc.gz", ".warc.zst", ".warc", ".arc.gz", ".arc")
# Common Crawl publishes its file lists as warc.paths.gz
MANIFEST_EXTENSIONS = (".paths", ".paths.gz", ".txt", ".lst", ".manifest")

INDEX_EXTENSIONS = (".cdx", ".cdxj", ".cdx.gz", ".cdxj.gz")
CLUSTER_EXTENSIONS = (".idx", ".summary")
# What marks a directory as a ZipNum cluster when a directory is searched
CLUSTER_INDEX = "cluster.idx"
# Common Crawl's published shards: read alone, each is a flat gzipped CDXJ file
SHARD_NAME = re.compile(r"cdx-\d+\.gz\Z")
# The 2012 Common Crawl URL index was published as url-index.<seconds>
LEGACY_PREFIX = "url-index."
# The usual archive name, whose CDX keeps Common Crawl's name: x.warc.gz -> x.cdx.gz
USUAL_ARCHIVE = ".warc.gz"
CDX_SUFFIX = ".cdx.gz"
# Characters a CDX path never holds as they are: control characters and backslashes
_UNSAFE = re.compile(r"[\x00-\x1f\x7f\\]")

# An archive to index: its path, its name in the index (``relative_name``), and the root
# that name is relative to (None for a base name)
Archive = namedtuple("Archive", "path name root", defaults=(None,))
# An existing index to read: its path, its name, and its kind ("cdx", "cluster", "legacy")
Index = namedtuple("Index", "path name kind")
# What ``expand`` found: archives and indexes in input order, the inputs that named
# nothing, the roots names are relative to, and warnings (dicts: file, offset, message)
Found = namedtuple("Found", "archives indexes missing roots warnings")


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


def safe_path(name):
    """``name`` as a relative path that stays below the directory it is joined to.

    Empty and ``.`` segments (a leading ``/``, ``a//b``) are dropped, ``..`` becomes
    ``%2E%2E``, control characters and backslashes become ``%XX``. A plain relative
    name is returned as it is.
    """
    segments = []
    for segment in name.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            segment = "%2E%2E"
        segments.append(_UNSAFE.sub(lambda m: "%%%02X" % ord(m.group()), segment))
    return "/".join(segments) or "%2E"


def cdx_name(name):
    """The CDX file of an archive name, relative to the CDX directory: the name with
    ``.cdx.gz`` added, or for the usual ``.warc.gz`` in its place (``a/x.warc.gz`` ->
    ``a/x.cdx.gz``, as Common Crawl names them; ``x.arc.gz`` -> ``x.arc.gz.cdx.gz``).

    The rule depends on the name alone, so a CDX keeps its name whatever else is
    indexed beside it, in this run or a later one, and ``x.warc.gz``, ``x.warc`` and
    ``x.arc.gz`` in one directory get three files. Names that are not plain relative
    paths are made so first (``safe_path``).
    """
    path = safe_path(name)
    if path.endswith(USUAL_ARCHIVE):
        return path[:-len(USUAL_ARCHIVE)] + CDX_SUFFIX
    return path + CDX_SUFFIX


def archive_stem(name):
    """An archive name without its extension: ``a/b/x.warc.gz`` -> ``a/b/x``."""
    for ext in ARCHIVE_EXTENSIONS:
        if name.endswith(ext):
            return name[:-len(ext)]
    return name


def _index_stem(name):
    for ext in INDEX_EXTENSIONS:
        if name.endswith(ext):
            return name[:-len(ext)]
    return name


def kind_of(path):
    """"archive", "cdx", "cluster", "legacy" or "manifest" by the name of ``path``, else by
    its first bytes when it is a local file; None for a remote one named like none."""
    name = path.rsplit("/", 1)[-1]
    if path.endswith(ARCHIVE_EXTENSIONS):
        return "archive"
    if path.endswith(INDEX_EXTENSIONS) or SHARD_NAME.match(name):
        return "cdx"
    if path.endswith(CLUSTER_EXTENSIONS):
        return "cluster"
    if name.startswith(LEGACY_PREFIX):
        return "legacy"
    if path.endswith(MANIFEST_EXTENSIONS):
        return "manifest"
    if not storage.is_local(path):
        return None
    return _sniff(path)


def _sniff(path):
    from .indexinputs import looks_like_cdx
    from .legacyindex import looks_like_legacy
    with open(path, "rb") as fh:
        head = fh.read(4096)
        size = os.fstat(fh.fileno()).st_size
    if compression(head) == "gz":
        try:  # what the first bytes inflate to (a cut stream gives what it can)
            inflated = zlib.decompressobj(31).decompress(head)
        except zlib.error:
            inflated = b""
        return "cdx" if looks_like_cdx(inflated) else "archive"
    if head.startswith(ARCHIVE_STARTS):
        return "archive"
    if looks_like_legacy(head, size):
        return "legacy"
    return "cdx" if looks_like_cdx(head) else "manifest"


def read_manifest(path):
    """The paths listed in a manifest file (plain or gzipped, local or on S3), made absolute.

    Local lines are normalized (``../x`` is the manifest directory's sibling); lines of
    a remote manifest are joined to its prefix as they are (an S3 key is what it says).
    """
    base = storage.dirname(storage.abspath(path))
    paths = []
    with storage.open_read(path) as raw:
        text = (gzip.open(raw, "rt", encoding="utf-8") if path.endswith(".gz")
                else io.TextIOWrapper(raw, "utf-8"))
        try:
            for line in text:
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                if storage.is_local(line):
                    line = storage.resolve(base, line)
                    if storage.is_local(line):
                        line = os.path.normpath(line)
                paths.append(line)
        except UnicodeDecodeError:
            raise InputError(f"{path} is neither an archive ({' '.join(ARCHIVE_EXTENSIONS)}) "
                             "nor a manifest (a text file listing one archive a line)") from None
    return base, paths


def _walk(directory):
    """(kind, path) of the archives and indexes under ``directory``; a directory that holds a
    cluster is that cluster alone (with the rest of a build's output directory holding it)."""
    listed = list(storage.list_files(directory))
    names = set(listed)
    skipped = []
    for path in listed:
        if path.rsplit("/", 1)[-1] == CLUSTER_INDEX:
            cluster_dir = path.rsplit("/", 1)[0]
            parent, _, last = cluster_dir.rpartition("/")
            build_output = last == "cluster" and parent + "/archives.txt" in names
            skipped.append(((parent if build_output else cluster_dir) + "/", path))
    found = []
    for path in listed:
        if any(path.startswith(prefix) for prefix, _ in skipped):
            if any(path == idx for _, idx in skipped):
                found.append(("cluster", path))
            continue
        if path.endswith(ARCHIVE_EXTENSIONS):
            found.append(("archive", path))
        elif path.endswith(INDEX_EXTENSIONS) or SHARD_NAME.match(path.rsplit("/", 1)[-1]):
            found.append(("cdx", path))
    # copy and recompress write each output's index beside it (x.cdxj), a CDX directory
    # may hold an archive's x.cdx.gz: that archive's lines, which the build makes itself
    stems = {archive_stem(p) for kind, p in found if kind == "archive"}
    stems |= {p for kind, p in found if kind == "archive"}
    return [("own-index" if kind == "cdx" and _index_stem(p) in stems else kind, p)
            for kind, p in found]


def _listed(paths, missing):
    """(kind, path) of the paths a manifest lists: absent local ones go to ``missing``; one
    named like nothing else is an archive, as manifests always listed archives."""
    found = []
    for path in paths:
        if storage.is_local(path) and not os.path.exists(path):
            missing.append(path)
            continue
        kind = kind_of(path) if not os.path.isdir(path) else None
        found.append((kind if kind not in (None, "manifest") else "archive", path))
    return found


def _expand_remote(url, roots, missing):
    """(kind, path) of what a URI INPUT names: itself, what its manifest lists, or what is
    under it (an S3 prefix, a Hadoop directory)."""
    kind = kind_of(url)
    if kind == "manifest":
        base, listed = read_manifest(url)
        roots.append(base)
        return _listed(listed, missing)
    if kind is not None:
        return [(kind, url)]
    roots.append(url.rstrip("/"))
    return _walk(url)


def _expand_local(item, roots, missing):
    matches = [item] if os.path.exists(item) else sorted(glob.glob(item, recursive=True))
    if not matches:
        missing.append(item)
    found = []
    for match in matches:
        match = os.path.abspath(match)
        if os.path.isdir(match):
            roots.append(match)
            found.extend(_walk(match))
            continue
        kind = kind_of(match)
        if kind == "manifest":
            base, listed = read_manifest(match)
            roots.append(base)
            found.extend(_listed(listed, missing))
        else:
            found.append((kind, match))
    return found


def expand(inputs, roots=()):
    """A ``Found`` for the INPUT arguments: archives and indexes in a stable order.

    ``missing`` lists inputs that name nothing; the caller decides whether that is
    fatal. Raises InputError when two archives would be indexed into one CDX file.
    """
    roots = [storage.abspath(r) for r in roots]
    found, missing = [], []
    for item in inputs:
        if storage.is_local(item):
            found.extend(_expand_local(item, roots, missing))
            continue
        try:
            named = _expand_remote(item, roots, missing)
        except FileNotFoundError:  # no such manifest or bucket
            named = []
        # any other OSError (no credentials, a store that keeps failing) is no bad usage
        if not named:
            missing.append(item)
        found.extend(named)
    archives, indexes, warnings, seen = [], [], [], {}
    for path, kind in dict((path, kind) for kind, path in found).items():
        root = _holding_root(path, roots)
        name = _name_under(path, root)
        if kind == "own-index":
            warnings.append({"file": path, "offset": 0, "message":
                             f"not read: the index of {archive_stem(path).rsplit('/', 1)[-1]}"
                             ".* beside it, whose lines the archive gives (name the file "
                             "itself as an INPUT to read it)"})
            continue
        if kind != "archive":
            indexes.append(Index(path, name, kind))
            continue
        target = cdx_name(name)
        other = seen.setdefault(target, path)
        if other != path:
            raise InputError(f"{other} and {path} would both be indexed into {target!r}: "
                             "pass their common parent directory instead, use --input-root, "
                             "or rename one")
        if safe_path(name) != name:
            warnings.append({"file": path, "offset": 0, "message":
                             f"its name {name!r} is not a plain relative path: its CDX is "
                             f"written to cdx/{target} (the CDX filename field keeps the name)"})
        archives.append(Archive(path, name, root))
    return Found(archives, indexes, missing, roots, warnings)


def expand_named(inputs, roots=()):
    """``expand``, and ``InputError`` for an INPUT that names nothing (a typo must not build
    of what the others name alone, nor write anything), or when none names an archive or
    an index. What a manifest lists that is not there stays a problem of the input
    (``Found.missing``)."""
    found = expand(inputs, roots)
    named_nothing = [path for path in found.missing if path in inputs]
    if named_nothing:
        raise InputError(f"no such file, directory or archive: {', '.join(named_nothing)} "
                         "(nothing was written)")
    if not found.archives and not found.indexes and not found.missing:
        raise InputError(f"no WARC/ARC files ({', '.join(ARCHIVE_EXTENSIONS)}) or indexes "
                         f"({', '.join(INDEX_EXTENSIONS)}, cluster.idx) found in "
                         f"{' '.join(inputs)}")
    return found


def expand_all(inputs, roots=()):
    """The archives of the INPUT arguments (indexes aside), as ``expand_named`` finds them;
    InputError also when a manifest lists what is not there, or nothing names an archive."""
    found = expand_named(inputs, roots)
    if found.missing:
        raise InputError(f"no such file or directory: {', '.join(found.missing)}")
    if not found.archives:
        raise InputError(f"no WARC/ARC files ({', '.join(ARCHIVE_EXTENSIONS)}) found in "
                         f"{' '.join(inputs)}")
    return found.archives


def dictionary_file(path):
    """A zstd dictionary file given as an option, made absolute (tasks and worker processes
    run elsewhere) once it was read and found usable (else an InputError, before anything
    runs); None for None."""
    if not path:
        return None
    from .zstdwarc import DictionaryError, load_dictionary
    path = storage.abspath(path)
    try:
        load_dictionary(path)
    except DictionaryError as exc:
        raise InputError(str(exc)) from None
    return path
