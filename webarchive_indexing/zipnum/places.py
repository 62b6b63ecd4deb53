"""Where a ZipNum cluster's files are: its ``cluster.idx`` found from a location, its
``.loc`` read, and the paths its shards are read at, never outside the index's directory.

Finding ``cluster.idx`` from a location (``cluster_index``), one search order for every
command (``query``, ``serve``, ``copy``, ``export``, ``build`` with a cluster as input or
as ``--splits``):

1. a location named as an index (``*.idx``, pywb's ``*.summary``), or a local file: itself;
2. else a directory: ``DIR/cluster/cluster.idx`` (a build's output directory), then
   ``DIR/cluster.idx``; for a directory named ``cluster``, the other way round (remotely
   each place tried costs a request).

A shard is read where pywb reads it (``Shards``): at the locations its line of the
``.loc`` beside the index gives (``cluster.loc`` for ``cluster.idx``; relative ones
resolved against the .loc's directory, ``read_loc``), then beside the index. A remote
cluster's shards are read beside its index only (a ``.loc`` would cost a request per
lookup, and its locations are often the builder's local paths: ``warn_remote_loc``).

Names from the index or the ``.loc`` are data that may come from someone else: a shard
name is judged by ``storage.below``'s rules when it is met (``check_name``), where it
leads once its symbolic links are followed each time it is read (``storage.inside``:
one shard's bad link fails the reads of that shard, not the opening of the cluster),
and a ``.loc`` location outside the index's directory is left out with a warning.
"""
import logging
import os

from .. import storage
from .layout import BadIdxLine, parse_idx_line

__all__ = ["INDEX_SUFFIXES", "cluster_index", "first_shard", "check_name", "read_loc",
           "Shards", "warn_remote_loc"]

log = logging.getLogger(__name__)

# What names a file as a cluster's index (pywb's secondary index is a .idx or a .summary)
INDEX_SUFFIXES = (".idx", ".summary")
# Bytes read from the start of cluster.idx for its first line (a key and the shard)
IDX_LINE_MAX = 1 << 16


def _places(location):
    """The places ``cluster_index`` looks at, in its order."""
    if location.endswith(INDEX_SUFFIXES) or storage.is_local(location) and not os.path.isdir(location):
        return [location]
    here = storage.join(location, "cluster.idx")
    below = storage.join(location, "cluster", "cluster.idx")
    return [here, below] if storage.basename(location.rstrip("/")) == "cluster" else [below, here]


def cluster_index(location, opener=None):
    """The ``cluster.idx`` of ``location``, a local path or URI, found in the one search
    order (see the module): the first place where it is. With ``opener``, ``opener(path)`` of
    it, tried at each remote place in turn instead of asking first (FileNotFoundError:
    the next). FileNotFoundError naming every place looked at if it is nowhere."""
    location = os.fspath(location)
    places = _places(location)
    for path in places:
        try:
            if storage.is_local(path):
                if os.path.isfile(path):
                    return opener(path) if opener else path
            elif opener is not None:
                return opener(path)
            elif storage.exists(path):
                return path
        except FileNotFoundError:
            continue
    raise FileNotFoundError(f"no ZipNum index at {' or '.join(places)} (give a cluster.idx, "
                            "a directory holding one, or a build's output directory)")


def first_shard(idx_path):
    """The shard the first line of the index ``idx_path`` names; None for an empty index or
    one whose first line is no index line. FileNotFoundError if there is none."""
    first = storage.read_range(idx_path, 0, IDX_LINE_MAX).split(b"\n", 1)[0]
    try:
        return parse_idx_line(first).shard if first else None
    except BadIdxLine:
        return None


def check_name(name):
    """``storage.Outside`` unless the shard name ``name`` is a name below a directory by
    ``storage.below``'s rules (no ``..``, scheme, absolute path...); the message is every
    reader's, who says where the name is."""
    try:
        storage.below(os.sep, name)  # below the root no link leads out: the name alone is judged
    except storage.Outside:
        raise storage.Outside(f"shard {name!r} is not a file below the cluster's directory: "
                              "nothing outside the cluster's directory is read") from None


def _loc_lines(text):
    """``(line number, shard, [location, ...])`` of each line of a ``.loc`` file's text."""
    for number, line in enumerate(text.split("\n"), 1):
        shard, *locations = line.removesuffix("\r").split("\t")
        if locations:
            yield number, shard, locations


def loc_lines_of(data, build=None):
    """The lines of a ``.loc`` file's bytes ``data`` whose shard is in the directory
    ``build`` (a build's ``build-NNNNN``), or beside the index for None: byte for byte, as a
    new ``.loc`` carries them over for the readers of the index it replaces."""
    def shard(line):
        return line.split(b"\t", 1)[0]
    lines = data.splitlines(True)
    if build is None:
        return b"".join(line for line in lines if b"/" not in shard(line))
    return b"".join(line for line in lines if shard(line).startswith(build.encode() + b"/"))


def read_loc(path, directory):
    """``{shard: (paths, refused)}`` of the local ``.loc`` file ``path``: each location
    resolved as pywb resolves it (a relative one against ``directory``, a ``file://`` URL
    as its path; links followed), those below ``directory`` in ``paths``, the others in
    ``refused`` with a warning (a cluster copied elsewhere lists its old place: its shard
    is then looked for beside the index). ``storage.Outside`` for a shard name that is
    not a name below a directory."""
    with open(path, encoding="utf-8", errors="replace") as loc:
        text = loc.read()
    locations = {}
    for number, shard, places in _loc_lines(text):
        try:
            check_name(shard)
        except storage.Outside as exc:
            raise storage.Outside(f"{path} line {number}: {exc}") from None
        paths, refused = [], []
        for location in places:
            local = storage.local_path(location)  # None for a URI
            resolved = local and os.path.realpath(os.path.join(directory, local))
            if resolved and storage.inside(resolved, directory):
                paths.append(resolved)
                continue
            log.warning("%s line %d: ignoring %r, which is not below the cluster's directory "
                        "%s (shards are read only there); looking for %s beside the index",
                        path, number, location, directory, shard)
            refused.append(f"{location} (outside the cluster's directory)")
        locations[shard] = paths, refused
    return locations


class Shards:
    """Where the shards of the cluster whose index is ``idx_path`` are read (see the
    module): its ``directory``, and ``locations``, the ``.loc``'s (``read_loc``; none for
    a remote cluster). ``storage.Outside`` for a ``.loc`` naming a shard no name below."""

    def __init__(self, idx_path):
        self.directory = storage.dirname(idx_path)
        loc = os.path.splitext(idx_path)[0] + ".loc"
        is_local_loc = storage.is_local(idx_path) and os.path.isfile(loc)
        self.locations = read_loc(loc, self.directory) if is_local_loc else {}

    def paths(self, shard):
        """``(paths, refused)``: where to read ``shard`` in order (its ``.loc`` locations,
        then beside the index), and where not (``.loc`` locations outside the directory,
        paths whose links lead out of it), each with why. ``storage.Outside`` for a
        shard name that is no name below a directory."""
        check_name(shard)
        found, refused = self.locations.get(shard, ([], []))
        beside = storage.resolve(self.directory, shard)
        paths, refused = [], list(refused)
        for path in found + ([beside] if beside not in found else []):
            if storage.inside(path, self.directory):
                paths.append(path)
            else:
                refused.append(f"{path} (leads out of the cluster's directory {self.directory}: "
                               "a symbolic link?)")
        return paths, refused


def warn_remote_loc(idx_path):
    """Warn (once, with a count) when the ``.loc`` of the remote cluster whose index is
    ``idx_path`` names shards other than those beside its index: they are not read (a
    request a lookup would cost, and often the builder's local paths), as a local
    ``.loc`` location elsewhere is not. One request; nothing when there is no ``.loc``."""
    if storage.is_local(idx_path):
        return
    path = os.path.splitext(idx_path)[0] + ".loc"
    directory = storage.dirname(idx_path)
    try:
        text = storage.read_bytes(path).decode("utf-8", "replace")
    except OSError:
        return  # none (or not readable): nothing a reader would miss
    elsewhere = []
    for _, shard, places in _loc_lines(text):
        beside = storage.join(directory, shard)
        elsewhere += [p for p in places if p and storage.resolve(directory, p) != beside]
    if elsewhere:
        log.warning("%s: ignoring %d location(s) that are not the shard beside the index "
                    "(e.g. %r): a remote cluster's shards are read only beside its index, in %s",
                    path, len(elsewhere), elsewhere[0], directory)
