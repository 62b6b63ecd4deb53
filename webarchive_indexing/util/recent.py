"""``Recent``: values by key, the least recently used dropped beyond a bound; the one such
store of the package (blocks and shard files in ``zipnum.reader``, ranges of a
``cluster.idx`` in ``zipnum.idxfile``)."""
import collections
import threading


class Recent:
    """Values by key, the least recently used dropped while their sizes add up to more than
    ``bound``; a value larger than the bound is not kept, unless ``keep_newest`` (then the
    newest value stays, alone if need be: a reader that must have it at hand); shared by
    threads."""

    def __init__(self, bound, keep_newest=False):
        self.bound = bound
        self.keep_newest = keep_newest
        self.size = 0
        self._values = collections.OrderedDict()  # key: (value, its size)
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            found = self._values.get(key)
            if found is None:
                return None
            self._values.move_to_end(key)
            return found[0]

    def put(self, key, value, size=1):
        if size > self.bound and not self.keep_newest:
            return
        with self._lock:
            old = self._values.pop(key, None)
            self.size += size - (old[1] if old else 0)
            self._values[key] = (value, size)
            while self.size > self.bound and len(self._values) > 1:
                _, (_, freed) = self._values.popitem(last=False)
                self.size -= freed

    def keys(self):
        with self._lock:
            return list(self._values)

    def _forget(self, gone):
        """Drop the values whose key ``gone(key)`` says."""
        with self._lock:
            for key in [key for key in self._values if gone(key)]:
                self.size -= self._values.pop(key)[1]
