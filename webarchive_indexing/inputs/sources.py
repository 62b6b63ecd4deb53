"""An index input opened as the source its kind calls for: the one place that knows every
kind of existing index (``names.kind_of`` tells them apart by name and content)."""
from .names import kind_of
from .indexes import CdxFile, IndexInputError, ZipNumCluster
from .legacy import LegacyIndex


def open_index(path, name=None, kind=None, rekey=False):
    """The source for an index input: ``kind`` "cdx", "cluster" or "legacy" (as
    ``inputs.kind_of`` tells, which is asked when not given); with ``rekey`` its URL keys
    made SURT keys as it is read. IndexInputError if it cannot be read or is no index, or
    (without ``rekey``) its keys are not SURT keys (``check_keys``); a legacy index's
    ``format`` is "cdxj" until set."""
    if kind is None:
        kind = kind_of(path)
    try:
        if kind == "legacy":
            return LegacyIndex(path, name)
        source = ZipNumCluster(path, name) if kind == "cluster" else CdxFile(path, name)
        source.rekey = rekey
        if not rekey:
            source.check_keys()
        return source
    except FileNotFoundError:
        raise IndexInputError(path, "no such file") from None
    except OSError as exc:
        raise IndexInputError(path, f"cannot read: {exc}") from None
