"""Which files a run reads (archives, and for ``build`` existing indexes), and the name each
archive gets in the index and under the output directory.

INPUT arguments may be files, directories (searched recursively), glob patterns and
manifest files (one path per line, as the original jobs took them; ``#`` starts a
comment; relative lines are relative to the manifest). An ``s3://`` INPUT is a file or
a manifest if its name ends like one, else a prefix to list like a directory
(``s3://bucket/crawl/``); globs are local only. Each file found is one of:

* an **archive** (``.warc.gz .warc.zst .warc .arc.gz .arc``, or a file that starts like one),
  or a WACZ (``.wacz``, or a file that starts like a ZIP), whose ``archive/`` entries are
  indexed in place (``warc.wacz``);
* an **index** (see ``inputs.indexes``): a flat CDX/CDXJ file (``.cdx .cdxj .cdx.gz
  .cdxj.gz``, Common Crawl's ``cdx-NNNNN.gz``, or a file whose first line is a CDX
  line); a ZipNum cluster (its ``cluster.idx``, any ``.idx``/``.summary``, or a
  directory holding ``cluster.idx``, or ``cluster/cluster.idx`` and ``archives.txt``
  as a build's output does: then nothing else below that directory is read);
  or the 2012 Common Crawl URL index (``inputs.legacy``; named ``url-index.*``, or a
  local file that starts like one).

Each archive gets a *name*: the ``filename`` field of its CDX lines.

* under a directory input (or a manifest's directory, or an ``--input-root``):
  the path relative to that root, e.g. ``crawl/a.warc.gz``;
* otherwise the file's base name.

    >>> relative_name("/data/crawl/seg1/a.warc.gz", ["/data/crawl"])
    'seg1/a.warc.gz'

A name is kept as it is in the ``filename`` field, whatever it holds (an S3 key may
hold ``..``); the CDX file's path under the output directory is made from it by
``cdx_name``, which never leaves that directory (``storage.safe_path``).
"""
import glob
import os
import re
import stat
from collections import namedtuple

from .. import storage
from .manifests import read_manifest
from .names import (ARCHIVE_EXTENSIONS, CLUSTER_INDEX, INDEX_EXTENSIONS, InputError,
                    archive_stem, index_stem, kind_of, shown_name)

# What marks a copy's plan (its chunks are CDX files of the lines the copies give)
COPY_PLAN, COPY_PLAN_LIST = "/plan/plan.json", "/plan/chunks.txt"
# The usual archive name, whose CDX keeps Common Crawl's name: x.warc.gz -> x.cdx.gz
USUAL_ARCHIVE = ".warc.gz"
CDX_SUFFIX = ".cdx.gz"
# Names of the WARC family that a walk does not take: files being written (Heritrix's
# .open, our .tmp- files), WAT/WET files (metadata and text made from WARCs), and
# compressions not read
_FAMILY = re.compile(r"\.(warc|arc|wat|wet)(\.(gz|zst|bz2|xz|lz4|lzma|br|z|zip|7z))?"
                     r"(\.open)?\Z", re.IGNORECASE)
_BEING_WRITTEN = re.compile(r"\A\.tmp-|\.open\Z")

# An archive to index: its path, its name in the index (``relative_name``), and the root
# that name is relative to (None for a base name)
Archive = namedtuple("Archive", "path name root", defaults=(None,))
# An existing index to read: its path, its name, and its kind ("cdx", "cluster", "legacy")
Index = namedtuple("Index", "path name kind")
# What ``expand`` found: archives and indexes in input order, the inputs that named
# nothing, the roots names are relative to, and warnings (dicts: file, offset, message)
Found = namedtuple("Found", "archives indexes missing roots warnings")


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
    """The CDX file of an archive name, relative to the CDX directory: the name with
    ``.cdx.gz`` added, or for the usual ``.warc.gz`` in its place (``a/x.warc.gz`` ->
    ``a/x.cdx.gz``, as Common Crawl names them; ``x.arc.gz`` -> ``x.arc.gz.cdx.gz``).

    The rule depends on the name alone, so a CDX keeps its name whatever else is
    indexed beside it, in this run or a later one, and ``x.warc.gz``, ``x.warc`` and
    ``x.arc.gz`` in one directory get three files. Names that are not plain relative
    paths are made so first (``storage.safe_path``).
    """
    path = storage.safe_path(name)
    if path.endswith(USUAL_ARCHIVE):
        return path[:-len(USUAL_ARCHIVE)] + CDX_SUFFIX
    return path + CDX_SUFFIX


def _not_regular(path):
    """What the local ``path`` is when it is no regular file (or link to one), which is
    not read (a FIFO would block, a device not end); None for a regular file."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return exc.strerror.lower()
    if stat.S_ISREG(mode):
        return None
    return ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
            "a directory" if stat.S_ISDIR(mode) else "not a regular file")


def _check_regular(path):
    what = _not_regular(path)
    if what:
        how = ("a manifest lists files: name the directory as an INPUT" if what == "a directory"
               else "copy what it gives into a file first")
        raise InputError(f"{shown_name(path)} is {what}: only regular files are read ({how})")


# Why a walk left a file out, as its summary line says
_WHY = {"output": "this run's own output (never read back)",
        "being written": "files being written (.open, .tmp-)",
        "wat": "WAT/WET files (made from WARC files: index those)",
        "compressed": "archives compressed in a way not read (read are "
                      + " ".join(ARCHIVE_EXTENSIONS) + ")",
        "not regular": "not regular files (a FIFO or device may never end)",
        "plan": "files of a copy's plan/ (the lines of what it copied from: the copies' "
                "own .cdxj are beside them)",
        "own build": "builds of archives this walk finds too (their lines would be there "
                     "twice: name a build's directory as an INPUT to read its cluster)"}


def _left_out(path, candidate):
    """Why a walk leaves out ``path``, a key of _WHY, or None; ``candidate``: whether it is
    named as an archive or index."""
    name = path.rsplit("/", 1)[-1]
    family = _FAMILY.search(name)
    if _BEING_WRITTEN.search(name) and (candidate or family):
        return "being written"
    if candidate:
        return "not regular" if storage.is_local(path) and _not_regular(path) else None
    if family:
        return "wat" if family.group(1).lower() in ("wat", "wet") else "compressed"
    return None


def _below_any(path, places):
    """Whether ``path`` is one of ``places`` or below one."""
    return any(path == p.rstrip("/") or path.startswith(p.rstrip("/") + "/") for p in places)


def _walk(directory, outputs=(), notes=None):
    """(kind, path) of the archives and indexes under ``directory``; a directory that holds a
    cluster is that cluster alone (with the rest of a build's output directory holding it).

    ``outputs``: files and directories this run writes, left out when below
    ``directory``. What is left out of the WARC family, and why, is one warning in
    ``notes``, and so is each cluster found below ``directory`` and each index not read as
    it is an archive's."""
    from ..zipnum.layout import shard_number  # (as in names.kind_of)
    notes = [] if notes is None else notes
    below = directory.rstrip("/") + "/"
    own = [o for o in outputs if o.startswith(below)]
    listed, left_out = [], {}
    for path in storage.list_files(directory):
        if _below_any(path, own):
            left_out.setdefault("output", []).append(path)
        else:
            listed.append(path)
    names = set(listed)
    plans = tuple(path[:-len("plan.json")] for path in listed if path.endswith(COPY_PLAN)
                  and path[:-len(COPY_PLAN)] + COPY_PLAN_LIST in names)
    if plans:
        left_out["plan"] = [path for path in listed if path.startswith(plans)]
        listed = [path for path in listed if not path.startswith(plans)]
    skipped, builds = [], {}
    for path in listed:
        if path.rsplit("/", 1)[-1] == CLUSTER_INDEX:
            cluster_dir = path.rsplit("/", 1)[0]
            parent, _, last = cluster_dir.rpartition("/")
            build_output = last == "cluster" and parent + "/archives.txt" in names
            cluster_dir = parent if build_output else cluster_dir
            skipped.append((cluster_dir + "/", path))
            if build_output:
                builds[path] = parent
    found = []
    for path in listed:
        if any(path.startswith(prefix) for prefix, _ in skipped):
            if any(path == idx for _, idx in skipped):
                found.append(("cluster", path))
            continue
        kind = ("archive" if path.endswith(ARCHIVE_EXTENSIONS) else
                "cdx" if path.endswith(INDEX_EXTENSIONS) or shard_number(path) is not None
                else None)
        why = _left_out(path, kind is not None)
        if why:
            left_out.setdefault(why, []).append(path)
        elif kind:
            found.append((kind, path))
    found = _clusters_once(found, builds, below, left_out, notes)
    # copy and recompress write each output's index beside it (x.cdxj), a CDX directory
    # may hold an archive's x.cdx.gz: that archive's lines, which the build makes itself
    stems = {}
    for kind, path in found:
        if kind == "archive":
            stems[archive_stem(path)] = stems[path] = path
    kept = []
    for kind, path in found:
        archive = stems.get(index_stem(path)) if kind == "cdx" else None
        if archive is None:
            kept.append((kind, path))
            continue
        notes.append({"file": path, "offset": 0, "message":
                      f"not read: the index of {archive.rsplit('/', 1)[-1]} beside it, whose "
                      "lines that archive gives (name the file itself as an INPUT to read it)"})
    if left_out:
        notes.append({"file": directory, "offset": 0, "message": "left out: " + "; ".join(
            f"{_WHY[why]}: {len(paths)}, e.g. {shown_name(paths[0][len(below):])}"
            for why, paths in left_out.items())})
    return kept


def _clusters_once(found, builds, below, left_out, notes):
    """``found`` without the build outputs (``builds``: cluster.idx -> its directory) that
    hold an archive the walk found too, whose lines would be there twice (the walk of a
    directory holding a build of itself): left out, in ``left_out``; each other cluster
    read once, said in ``notes``."""
    archives = {path for kind, path in found if kind == "archive"}
    kept = []
    for kind, path in found:
        place = path[:-len(CLUSTER_INDEX) - 1] if kind == "cluster" else None
        if place is not None and path in builds:
            place = builds[path]
            listed = storage.read_bytes(place + "/archives.txt").decode("utf-8", "replace")
            if archives.intersection(listed.splitlines()):
                left_out.setdefault("own build", []).append(place)
                continue
        if place is not None and place + "/" != below:
            what = "a build's output directory" if path in builds else "a cluster"
            notes.append({"file": place, "offset": 0, "message":
                          f"read as {what} (its {CLUSTER_INDEX}), once: nothing else below "
                          "it is read; name the directories beside it to leave it out"})
        kept.append((kind, path))
    return kept


def _listed(paths, missing):
    """(kind, path) of the paths a manifest lists: absent local ones go to ``missing``; one
    named like nothing else is an archive, as manifests always listed archives."""
    found = []
    for path in paths:
        if storage.is_local(path):
            if not os.path.exists(path):
                missing.append(path)
                continue
            _check_regular(path)
        kind = kind_of(path)
        found.append((kind if kind not in (None, "manifest") else "archive", path))
    return found


def _expand_remote(url, roots, missing, outputs, notes):
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
    return _walk(url, outputs, notes)


def _expand_local(item, roots, missing, outputs, notes):
    matches = [item] if os.path.exists(item) else sorted(glob.glob(item, recursive=True))
    if not matches:
        missing.append(item)
    elif matches != [item]:  # a pattern, which may match what this run writes
        own = [m for m in matches if _below_any(os.path.abspath(m), outputs)]
        if own:
            matches = [m for m in matches if m not in own]
            notes.append({"file": item, "offset": 0, "message": f"left out: {_WHY['output']}: "
                          f"{len(own)}, e.g. {shown_name(own[0])}"})
    found = []
    for match in matches:
        match = os.path.abspath(match)
        if os.path.isdir(match):
            roots.append(match)
            found.extend(_walk(match, outputs, notes))
            continue
        _check_regular(match)
        kind = kind_of(match)
        if kind == "manifest":
            base, listed = read_manifest(match)
            roots.append(base)
            found.extend(_listed(listed, missing))
        else:
            found.append((kind, match))
    return found


def _check_text_name(path):
    """InputError for a local file whose name is not UTF-8: CDX lines are UTF-8 text, and
    pywb finds an archive by the name its lines hold."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{shown_name(path)}: its name is not UTF-8 (the \\x bytes shown): "
                         "CDX lines are UTF-8 text, and pywb finds an archive by the name they "
                         "hold; rename it to UTF-8 (e.g. convmv -f latin1 -t utf-8 --notest "
                         "FILE)") from None


def expand(inputs, roots=(), outputs=(), cdx_names=True):
    """A ``Found`` for the INPUT arguments: archives and indexes in a stable order.

    ``missing`` lists inputs that name nothing; the caller decides whether that is
    fatal. ``outputs``: the files and directories this run writes, which a directory
    searched never reads. With ``cdx_names`` (for commands that write CDX files), raises
    InputError when two archives would be indexed into one CDX file; also for a name that
    is not UTF-8, and for an INPUT that is no regular file or no manifest.
    """
    roots = [storage.abspath(r) for r in roots]
    outputs = [storage.abspath(o) for o in outputs]
    found, missing, warnings = [], [], []
    for item in inputs:
        if storage.is_local(item):
            found.extend(_expand_local(item, roots, missing, outputs, warnings))
            continue
        try:
            named = _expand_remote(item, roots, missing, outputs, warnings)
        except FileNotFoundError:  # no such manifest or bucket
            named = []
        # any other OSError (no credentials, a store that keeps failing) is no bad usage
        if not named:
            missing.append(item)
        found.extend(named)
    archives, indexes, seen = [], [], {}
    for path, kind in dict((path, kind) for kind, path in found).items():
        _check_text_name(path)
        root = _holding_root(path, roots)
        name = _name_under(path, root)
        if kind != "archive":
            indexes.append(Index(path, name, kind))
            continue
        target = cdx_name(name)
        other = seen.setdefault(target, path)
        if other != path and cdx_names:
            raise InputError(f"{other} and {path} would both be indexed into {target!r}: "
                             "pass their common parent directory instead, use --input-root, "
                             "or rename one")
        if storage.safe_path(name) != name and cdx_names:
            warnings.append({"file": path, "offset": 0, "message":
                             f"its name {name!r} is not a plain relative path: its CDX is "
                             f"written to cdx/{target} (the CDX filename field keeps the name)"})
        archives.append(Archive(path, name, root))
    return Found(archives, indexes, missing, roots, warnings)


def expand_named(inputs, roots=(), outputs=(), cdx_names=True):
    """``expand``, and ``InputError`` for an INPUT that names nothing (a typo must not build
    of what the others name alone, nor write anything), or when none names an archive or
    an index. What a manifest lists that is not there stays a problem of the input
    (``Found.missing``)."""
    found = expand(inputs, roots, outputs, cdx_names)
    named_nothing = [path for path in found.missing if path in inputs]
    if named_nothing:
        raise InputError(f"no such file, directory or archive: {', '.join(named_nothing)} "
                         "(nothing was written)")
    if not found.archives and not found.indexes and not found.missing:
        left = "".join(f"; {w['file']}: {w['message']}" for w in found.warnings)
        raise InputError(f"no WARC/ARC files ({', '.join(ARCHIVE_EXTENSIONS)}) or indexes "
                         f"({', '.join(INDEX_EXTENSIONS)}, cluster.idx) found in "
                         f"{' '.join(inputs)}{left}")
    return found


def expand_all(inputs, roots=(), outputs=(), cdx_names=True):
    """``expand_named``'s ``Found``, for the archives of the INPUT arguments (indexes aside);
    InputError also when a manifest lists what is not there, or nothing names an archive."""
    found = expand_named(inputs, roots, outputs, cdx_names)
    if found.missing:
        raise InputError(f"no such file or directory: {', '.join(found.missing)}")
    if not found.archives:
        raise InputError(f"no WARC/ARC files ({', '.join(ARCHIVE_EXTENSIONS)}) found in "
                         f"{' '.join(inputs)}")
    return found


def check_output(output, inputs=()):
    """InputError, before anything is written, when the file or directory ``output`` a
    command writes is one of the files ``inputs`` it reads, or lies in a published
    cluster (a directory holding cluster.idx), which only a build writes."""
    check_outputs([output], inputs)


def check_outputs(outputs, inputs=()):
    """``check_output`` for each of ``outputs`` (each input and directory looked at once)."""
    read = {}
    for path in inputs:
        read.setdefault(os.path.realpath(path) if storage.is_local(path)
                        else storage.abspath(path), path)
    clusters = {}
    for output in outputs:
        local = storage.is_local(output)
        target = os.path.realpath(output) if local else storage.abspath(output)
        if target in read:
            raise InputError(f"the output {shown_name(output)} is also an input "
                             f"({shown_name(read[target])}): writing it would destroy what is "
                             "read; give another output")
        cluster = _published_cluster(target, clusters) if local else None
        if cluster:
            raise InputError(f"the output {shown_name(output)} is inside the published cluster "
                             f"{shown_name(cluster)}/, which only a build writes: give "
                             "another output")


def _published_cluster(path, known):
    """The directory holding ``cluster.idx`` that is ``path`` or above it, or None;
    ``known``: what was found of directories before."""
    below = []
    while path not in known:
        below.append(path)
        parent = os.path.dirname(path)
        if os.path.isfile(os.path.join(path, CLUSTER_INDEX)):
            known[path] = path
        elif parent == path:
            known[path] = None
        else:
            path = parent
    for seen in below:
        known[seen] = known[path]
    return known[path]


def dictionary_file(path):
    """A zstd dictionary file given as an option, made absolute (tasks and worker processes
    run elsewhere) once it was read and found usable (else an InputError, before anything
    runs); None for None."""
    if not path:
        return None
    from ..warc.zstdwarc import DictionaryError, load_dictionary
    path = storage.abspath(path)
    try:
        load_dictionary(path)
    except DictionaryError as exc:
        raise InputError(str(exc)) from None
    return path
