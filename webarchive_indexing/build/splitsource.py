"""Split points from elsewhere (``build --splits FILE``): a ``splits.txt``, a Hadoop
``splits.seq``, or an existing cluster.

    points = load_splits("old/splits.txt", shards=None)     # as they are: len + 1 shards
    points = load_splits("old/cluster", shards=40)          # 39 points, evenly by blocks

* ``splits.txt`` / ``splits.seq`` (what ``build`` writes, and what the original jobs
  wrote): their points, if ``shards`` is None or one more than their number; for fewer
  shards, points taken evenly among them (``splits.choose_splits``); more shards than
  they can make is an error.
* a cluster (a ``cluster.idx``, a directory holding one, or a build's output directory
  holding ``cluster/``): the first keys of its blocks (``urlkey timestamp``), taken
  evenly by blocks; ``shards`` defaults to the cluster's own number of shards. A key
  sorts before every line that starts with it, so a block's first line goes to the
  shard its key starts.

Every source must give strictly increasing points (a ``ValueError`` names the line
otherwise); the result always makes exactly ``shards`` shards.
"""
import io
import os

from . import seqfile
from ..cdx import splits
from .. import storage
from ..util.progress import counted
from ..zipnum.layout import BadIdxLine, parse_idx_line
from ..zipnum.places import INDEX_SUFFIXES, cluster_index


class SplitsError(ValueError):
    pass


def _cluster_index(path):
    """The ``cluster.idx`` that ``path`` names (as ``places.cluster_index`` finds it), if
    it names a cluster; else None: a local file not named as an index is a splits file."""
    if storage.is_local(path) and not path.endswith(INDEX_SUFFIXES) and not os.path.isdir(path):
        return None
    try:
        return cluster_index(path)
    except FileNotFoundError:
        return None


def _from_cluster(idx_path, shards):
    keys, names = [], set()
    for number, line in enumerate(storage.read_bytes(idx_path).splitlines(), 1):
        try:
            entry = parse_idx_line(line)
            keys.append(entry.key.decode("utf-8"))
        except (BadIdxLine, UnicodeDecodeError) as exc:
            raise SplitsError(f"{idx_path}, line {number}: not a cluster.idx line: {exc}") from None
        names.add(entry.shard)
    if keys != sorted(keys):
        raise SplitsError(f"{idx_path}: its block keys are not in order: not a cluster index")
    shards = len(names) if shards is None else shards
    distinct = len(set(keys))
    if shards > distinct:
        raise SplitsError(f"{idx_path} has {distinct} distinct block keys: it can give at most "
                          f"{distinct} shards, not {shards}")
    return splits.choose_splits(keys, shards)


def _from_points(path, points, shards):
    if shards is None or shards == len(points) + 1:
        return points
    if shards > len(points) + 1:
        raise SplitsError(f"{path} holds {counted(len(points), 'split point')}: they make at "
                          f"most {counted(len(points) + 1, 'shard')}, not {shards}")
    return splits.choose_splits(points, shards)


def load_splits(path, shards=None):
    """Exactly ``shards - 1`` split lines from the splits file or cluster at ``path``."""
    idx = _cluster_index(path)
    if idx is not None:
        return _from_cluster(idx, shards)
    try:
        data = storage.read_bytes(path)
    except FileNotFoundError:
        raise SplitsError(f"{path}: no such file or directory") from None
    except IsADirectoryError:
        raise SplitsError(f"{path} is a directory without a cluster.idx: give a splits.txt, "
                          "a splits.seq, or a cluster") from None
    try:
        if data.startswith(seqfile.MAGIC):
            points = seqfile.read_text_keys(io.BytesIO(data))
            splits.format_splits(points)  # checks the order
        else:
            points = splits.parse_splits(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise SplitsError(f"{path}: {exc}") from None
    return _from_points(path, points, shards)
