"""A collection: one or more clusters searched as one index, and the answer to a CDX API
request (``request.CdxRequest``) over it; what ``query`` prints and ``serve`` sends.

The clusters' lines are merged in key order (as users ask "all crawls" at once). Pages
(``page=``, ``showNumPages``) of a collection of several clusters are the pages of the
first cluster, then those of the next: each line is on exactly one page.

    collection = Collection.open("cc", ["crawl-1/", "s3://bucket/crawl-2/"])
    request = CdxRequest.from_query(urllib.parse.parse_qs("url=*.example.com&limit=5"))
    content_type, body = collection.answer(request)
    for chunk in body:
        sys.stdout.buffer.write(chunk)

    # what webarchive-index query prints
    sys.stdout.buffer.writelines(query("out/", CdxRequest("*.example.com", limit=5)))
"""
import heapq
import itertools
import json
import logging
import threading
import time

from warcio.timeutils import sec_to_timestamp, timestamp_to_sec

from .request import (CONTENT_TYPES, HELD_LINES, BadParameter, Capture, RequestTimeout, collapsed,
                      formatter, resume_key, selected, timemap)
from ..zipnum import idxfile
from .. import storage
from ..options import DEFAULT_RELOAD_SECONDS
from ..zipnum.places import warn_remote_loc
from ..zipnum.reader import DEFAULT_PAGE_SIZE, open_cluster

__all__ = ["Collection", "Reloading", "query"]

log = logging.getLogger(__name__)

JSON = "application/json"
# lines between two looks at the clock of a request with a deadline
CLOCK_EVERY = 256


def query(location, request, cache=None, access=None):
    """The answer to ``request`` (a ``CdxRequest``) from the cluster at ``location`` (as
    ``reader.open_cluster`` takes it), as ``webarchive-index query`` prints it: bytes,
    lazily; with the rules of ``access`` (``access.Access``) for ``request.acl_user``. The cluster's
    index is opened now: OSError (``DamagedCluster`` too) if it cannot be read;
    BadParameter, OSError or ValueError later, from the body."""
    return Collection.open(location, [location], cache, access).answer(request)[1]


class Collection:
    """Clusters searched as one index (``name``: what a server calls it), with the
    access rules ``access`` (``access.Access``) if any: every answer then has only the
    captures they let through (``check``: the request's ``access.Checker``)."""

    check = None

    def __init__(self, name, clusters, access=None):
        self.name = name
        self.clusters = list(clusters)
        self.access = access if access else None

    @classmethod
    def open(cls, name, locations, cache=None, access=None):
        """The collection of the clusters at ``locations`` (as ``reader.open_cluster``
        takes them); each cluster's index is opened now, so a bad one is named at once."""
        return cls(name, [open_cluster(location, cache=cache) for location in locations], access)

    def checked(self, user=None):
        """This collection for one request by ``user``, under the rules in force now
        (``access.RuleError`` if they cannot be read: no answer without them)."""
        if self.access is None:
            return self
        view = object.__new__(type(self))
        view.__dict__.update(self.__dict__, check=self.access.checker(user))
        return view

    def current(self, recheck=False):
        """This collection: what a server answers from (as ``Reloading.current``)."""
        return self

    def answer(self, request, deadline=None):
        """``(content type, body)`` for ``request`` (by ``request.acl_user``): body yields
        bytes, lazily. Errors in the request (BadParameter) and in reading come from the
        body's first chunk, or later for what only shows further in (a damaged block);
        rules that cannot be read (``access.RuleError``), at once."""
        if self.access is not None and self.check is None:
            return self.checked(request.acl_user).answer(request, deadline)
        for predicate in request.predicates:
            predicate.deadline = deadline
        if request.show_num_pages:
            return JSON, self._json(self._num_pages(request))
        if request.show_num_captures:
            return JSON, self._json(lambda: {"captures": self._count(request, deadline)})
        if request.show_paged_index:
            return "text/x-ndjson" if request.output == "json" else "text/plain", self._paged_index(request)
        body = self._captures(request, deadline)
        return CONTENT_TYPES[request.output], timemap(body) if request.output == "link" else body

    # -- lines -------------------------------------------------------------------------

    def lines(self, start, end, reverse=False, resume=None, deadline=None):
        """The captures ``start <= line < end`` of every cluster in key order (last first
        if ``reverse``); after the position ``resume`` (``(line, copy)``) if given."""
        if resume is not None:
            if reverse:
                end = min(end, resume[0] + b"\x00")
            else:
                start = max(start, resume[0])
        streams = [c.lookup_range_back(start, end) if reverse else c.lookup_range(start, end)
                   for c in self.clusters]
        merged = streams[0] if len(streams) == 1 else heapq.merge(*streams, reverse=reverse)
        previous, copy = None, 0
        for n, line in enumerate(merged):
            if deadline is not None and n % CLOCK_EVERY == 0 and time.monotonic() > deadline:
                raise RequestTimeout("the request took too long")
            copy = copy + 1 if line == previous else 1
            previous = line
            if resume is not None and line == resume[0] and copy <= resume[1]:
                continue
            if self.check is None:
                yield Capture(line, copy)
                continue
            # counted after the copies: equal lines have one access, so a resume key
            # names the same place with the rules as without
            access = self.check(line)
            if access is not None:
                yield Capture(line, copy, access)

    def _permitted(self, lines):
        """Captures of ``lines`` that the rules let through, marked."""
        if self.check is None:
            return map(Capture, lines)
        return (Capture(line, 1, access) for line in lines if (access := self.check(line)) is not None)

    def _selected(self, request, reverse=False, deadline=None, resume=None):
        captures = selected(self.lines(request.start, request.end, reverse, resume or request.resume, deadline),
                            request.predicates, request.from_ts, request.to_ts)
        if request.collapse:
            after = Capture(request.resume[0]) if request.resume and not reverse else None
            captures = collapsed(captures, request.collapse, backwards=reverse, after=after)
        return captures

    def _captures(self, request, deadline):
        write = formatter(request.output, request.fields)
        if request.page is not None:
            captures = selected(self._permitted(self._page(request)), request.predicates,
                                request.from_ts, request.to_ts)
            yield from map(write, itertools.islice(captures, request.limit))
            return
        if request.sort == "closest":
            yield from map(write, self._closest(request, deadline))
            return
        limit = request.limit
        if limit is not None and limit < 0:
            yield from map(write, self._last(request, -limit, deadline))
            return
        captures = iter(self._selected(request, request.sort == "reverse", deadline))
        last = None
        for capture in itertools.islice(captures, limit):
            last = capture
            yield write(capture)
        if request.show_resume_key and last is not None and next(captures, None) is not None:
            key = resume_key(last)
            yield (json.dumps({"resumeKey": key}) + "\n").encode() if request.output == "json" \
                else b"\n" + key.encode() + b"\n"

    def _last(self, request, count, deadline):
        """The last ``count`` captures in index order (with sort=reverse the first
        ``count``, last first), holding none: read from the end to the ``count``th,
        then from it back to the end."""
        backwards = request.sort != "reverse"
        nth = None
        for nth in itertools.islice(self._selected(request, backwards, deadline), count):
            pass
        if nth is None:
            return iter(())
        # resumed just before it going the other way: the lines equal to it that come
        # first that way are skipped (its copy counts them from this side)
        equal = sum(1 for _ in self.lines(nth.line, nth.line + b"\x00", deadline=deadline))
        return itertools.islice(self._selected(request, not backwards, deadline, (nth.line, equal - nth.copy)), count)

    def _closest(self, request, deadline):
        """Captures nearest ``closest`` first (ties in index order), as pywb sorts them.
        An exact URL's captures are in time order: read outwards from ``closest`` in
        both directions, holding at most ``HELD_LINES`` of one second; others are
        sorted, holding ``limit`` lines (at most ``HELD_LINES``)."""
        target = timestamp_to_sec(request.closest)

        def distance(capture):
            return abs(timestamp_to_sec(capture.value("timestamp")) - target)

        start, end = request.range
        if not request.sorts_held:
            # the target's own timestamp (closest=2015 is the end of 2015, as pywb reads it):
            # captures at or after it sort after it, those before it before
            pivot = start + b" " + sec_to_timestamp(target).encode()
            later = selected(self.lines(pivot, end, deadline=deadline), request.predicates,
                             request.from_ts, request.to_ts)
            earlier = selected(self.lines(start, pivot, reverse=True, deadline=deadline),
                               request.predicates, request.from_ts, request.to_ts)
            earlier = self._seconds_in_order(earlier, request, deadline)
            nearest = heapq.merge(((distance(c), 0, c) for c in earlier),
                                  ((distance(c), 1, c) for c in later), key=lambda t: t[:2])
            return (c for _, _, c in itertools.islice(nearest, request.limit))
        # the lines alone are held (not their parsed fields); one more than asked tells
        # whether a request without limit got them all
        held = request.limit or HELD_LINES
        ranked = heapq.nsmallest(held + 1, ((distance(c), n, c.line, c.access) for n, c in
                                            enumerate(self._selected(request, deadline=deadline))))
        if len(ranked) > held and request.limit is None:
            raise BadParameter("limit", f"sort=closest over more than {HELD_LINES} captures of several "
                                        "URLs (or with collapse) holds them all to sort them: give "
                                        f"limit=N (at most {HELD_LINES}) for the nearest N, or an exact url")
        return (Capture(line, 1, access) for _, _, line, access in ranked[:held])

    def _seconds_in_order(self, earlier, request, deadline):
        """``earlier`` (an exact URL's captures read backwards) with those of each second
        put back in index order: held, up to ``HELD_LINES`` of them, else read again."""
        for stamp, same in itertools.groupby(earlier, lambda c: c.value("timestamp")):
            group = [Capture(c.line, c.copy, c.access) for c in itertools.islice(same, HELD_LINES)]  # not their fields
            if len(group) < HELD_LINES:
                yield from reversed(group)
                continue
            del group[:]
            second = request.start + b" " + stamp.encode()
            yield from selected(self.lines(second + b" ", second + b"!", deadline=deadline),
                                request.predicates, request.from_ts, request.to_ts)

    def _count(self, request, deadline):
        if request.predicates or request.from_ts or request.to_ts or request.collapse or self.check:
            return sum(1 for _ in self._selected(request, deadline=deadline))
        return sum(cluster.count_range(*request.range) for cluster in self.clusters)

    # -- pages -------------------------------------------------------------------------

    def _page_size(self, request):
        return request.page_size or DEFAULT_PAGE_SIZE

    def _num_pages(self, request):
        def info():
            infos = [c.page_info(*request.range, self._page_size(request)) for c in self.clusters]
            return {"pages": sum(i["pages"] for i in infos), "pageSize": self._page_size(request),
                    "blocks": sum(i["blocks"] for i in infos)}
        return info

    def _locate_page(self, request):
        """``(cluster, page in it)`` of the collection's page ``request.page``."""
        size, page = self._page_size(request), request.page
        if len(self.clusters) == 1:
            return self.clusters[0], page
        pages = 0
        for cluster in self.clusters:
            count = cluster.page_info(*request.range, size)["pages"]
            if page < pages + count:
                return cluster, page - pages
            pages += count
        raise BadParameter("page", f"Page {page} invalid: First Page is 0, Last Page is {pages - 1}", named=False)

    def _page(self, request):
        cluster, page = self._locate_page(request)
        try:
            return cluster.page(*request.range, page, self._page_size(request))
        except ValueError as exc:
            raise BadParameter("page", str(exc), named=False) from None

    def _paged_index(self, request):
        if request.page is not None:
            cluster, page = self._locate_page(request)
            try:
                pages = [(cluster, cluster.page_index(*request.range, page, self._page_size(request)))]
            except ValueError as exc:
                raise BadParameter("page", str(exc), named=False) from None
        else:
            pages = [(cluster, cluster.idx.scan(*request.range)) for cluster in self.clusters]
        for cluster, lines in pages:
            for line in lines:
                if request.output != "json":
                    yield line + b"\n"
                    continue
                key, shard, offset, length, lineno = cluster.idx.check_line(line, "a line")
                fields = {"urlkey": key.decode(), "part": shard, "offset": offset, "length": length}
                if lineno is not None:
                    fields["lineno"] = lineno
                yield (json.dumps(fields) + "\n").encode()

    @staticmethod
    def _json(make):
        yield (json.dumps(make()) + "\n").encode()


class Reloading:
    """A collection that follows its clusters as builds publish them (what ``serve``
    answers from): ``current()`` is a ``Collection`` of the clusters published last, each
    request answered from one such snapshot whole (never lines of two builds).

    A local cluster's ``cluster.idx`` is looked at (a stat) at every ``current()``, a
    remote one's (a request: ``idxfile.version``) at most every ``every`` seconds, and
    with ``recheck`` (a request that failed: retried on the new build if there is one).
    A replaced index is opened anew; the snapshot a request holds reads on from what it
    opened (a local index through its open file; its shards stay until the build after
    next, see ``publish``). A cluster that cannot be reopened keeps being served as it
    was (a warning says why).
    """

    def __init__(self, name, locations, cache=None, every=DEFAULT_RELOAD_SECONDS, access=None):
        self.name, self.cache, self.every, self.access = name, cache, every, access
        clusters = [open_cluster(location, cache=cache) for location in locations]
        versions = []
        for cluster in clusters:
            warn_remote_loc(cluster.idx.path)
            versions.append(cluster.idx.version or idxfile.version(cluster.idx.path))
        self._state = (Collection(name, clusters, access), versions)
        self._checked = time.monotonic()
        self._reopening = threading.Lock()
        # {cluster's number: the version of its index that could not be opened}: tried
        # again only once the index changes again
        self._failed = {}

    @property
    def clusters(self):
        return self._state[0].clusters

    def current(self, recheck=False):
        """The ``Collection`` to answer a request from (see the class); ``recheck``: look
        at every cluster now, waiting for a request already looking."""
        collection, versions = self._state
        due = recheck or time.monotonic() - self._checked >= self.every
        look = [i for i, cluster in enumerate(collection.clusters)
                if due or storage.is_local(cluster.idx.path)]
        if not look or not self._reopening.acquire(blocking=recheck):
            return collection  # another request is looking: this one answers from what is
        try:
            return self._reopened(look)
        finally:
            self._reopening.release()

    def _reopened(self, look):
        collection, versions = self._state
        clusters, versions = list(collection.clusters), list(versions)
        if any(not storage.is_local(clusters[i].idx.path) for i in look):
            self._checked = time.monotonic()
        changed = False
        for i in look:
            path = clusters[i].idx.path
            version = None
            try:
                version = idxfile.version(path)
                if version in (versions[i], self._failed.get(i)):
                    continue
                cluster = open_cluster(path, cache=self.cache)
                cluster.idx.check()  # a new index that is not one is not switched to
                warn_remote_loc(cluster.idx.path)
            except (OSError, ValueError) as exc:
                if version is not None or i not in self._failed:
                    log.warning("%s: cannot open the new index of collection %s (answering from "
                                "the one opened before): %s", path, self.name, exc)
                self._failed[i] = version
                continue
            # a local index: what was opened (a build may have come since the stat)
            clusters[i].let_go()
            clusters[i], versions[i], changed = cluster, cluster.idx.version or version, True
            log.info("%s: a new build published: collection %s answers from it", path, self.name)
        if changed:
            self._state = (Collection(self.name, clusters, self.access), versions)
        return self._state[0]
