"""The made-up web a test corpus crawls (``corpus``): its sites, URLs and payloads, the
HTTP answers they give, and the captures of one crawl of them, independent of how they are
written (WARC or ARC).

Everything is drawn from seeded ``random.Random`` streams: the same arguments give the
same captures.
"""
import base64
import email.utils
import hashlib
import itertools
import json
import math
import random
from datetime import datetime, timedelta
from html import escape
from typing import NamedTuple, Optional

_P_REVISIT = 0.05
_P_NO_PAYLOAD_DIGEST = 0.05
_P_NO_CONTENT_TYPE = 0.02
_P_IDENTIFIED_TYPE = 0.10
_P_RESOURCE = 0.015
_P_FRACTIONAL_DATE = 0.15
_P_LOWERCASE_HEADERS = 0.05
_P_NAV_PATH = 0.35  # re-crawls the same URLs, so one URL gets several captures
_REVISIT_POOL = 64  # earlier 200s a revisit may repeat; bounded to cap memory
_HTML_TYPES = ("text/html", "application/xhtml+xml")


def _table(pairs):
    """(value, weight) pairs -> (values, cumulative weights), the fast form for random.choices."""
    return tuple(v for v, _ in pairs), list(itertools.accumulate(w for _, w in pairs))


def _pick(rng, table):
    values, cum = table
    return rng.choices(values, cum_weights=cum)[0]


_SYLLABLES = tuple("ba be bi bo da de do fa fe ga go ha he ki ko la le li lu ma me mo "
                   "na ni no pa po ra re ri ro sa se si so ta te ti tu va vo za".split())
_SUBDOMAINS = _table((("www.", 45), ("", 25), ("WWW.", 3), ("blog.", 5), ("m.", 5), ("shop.", 4),
                      ("news.", 4), ("en.", 3), ("static.cdn.", 2), ("forum.", 2), ("www2.", 2)))
_TLDS = _table((("com", 40), ("org", 9), ("net", 7), ("de", 6), ("co.uk", 4), ("fr", 3), ("jp", 3),
                ("ru", 3), ("com.br", 2), ("nl", 2), ("it", 2), ("pl", 2), ("es", 2), ("com.au", 2),
                ("ca", 2), ("io", 2), ("edu", 1), ("gov", 1), ("info", 1), ("xn--p1ai", 1)))
_SERVERS = _table((("nginx", 35), ("Apache", 30), ("cloudflare", 20), ("Microsoft-IIS/10.0", 5),
                   ("LiteSpeed", 5), ("openresty", 5)))
_STATUSES = _table((((200, "OK"), 855), ((301, "Moved Permanently"), 50), ((302, "Found"), 30),
                    ((404, "Not Found"), 35), ((403, "Forbidden"), 10),
                    ((500, "Internal Server Error"), 12), ((503, "Service Unavailable"), 8)))
_PAYLOAD_TYPES = _table((("text/html", 780), ("application/xhtml+xml", 20), ("text/plain", 30),
                         ("application/json", 30), ("text/css", 20), ("application/javascript", 30),
                         ("application/xml", 10), ("application/pdf", 20), ("image/jpeg", 35),
                         ("image/png", 20), ("image/gif", 5)))
_BINARY_MAGIC = {"application/pdf": b"%PDF-1.5\n", "image/jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00",
                 "image/png": b"\x89PNG\r\n\x1a\n", "image/gif": b"GIF89a"}
_TEXT_STYLES = _table((("{mime}", 40), ("{mime}; charset=UTF-8", 28), ("{mime}; charset=utf-8", 15),
                       ("{mime};charset=ISO-8859-1", 5), ("{odd}", 6), ("{odd}; Charset=UTF-8", 6)))
_BINARY_STYLES = _table((("{mime}", 94), ("{odd}", 6)))
_PATH_ENDINGS = _table((("", 40), (".html", 20), ("/", 15), (".php", 10), (".htm", 5), (".aspx", 5),
                        (".jsp", 5)))
_QUERY_KEYS = ("id", "page", "q", "lang", "sort", "ref", "utm_source", "utm_medium", "s", "cat",
               "p", "view", "PHPSESSID", "sessionid", "Start", "amp")
_ESCAPES = ("%20", "%C3%A9", "%c3%bc", "%7E", "%2F", "%28", "+", "%E2%82%AC")


# --- text -------------------------------------------------------------------------------

def _coin(rng):
    return "".join(rng.choices(_SYLLABLES, k=rng.choice((1, 2, 2, 3, 3, 4))))


class _Lexicon:
    """Zipf-weighted coined words, with sentences and HTML blocks pre-built from them.

    Payloads are assembled from whole pre-built chunks because generating text word by
    word would dominate the run time of benchmark-sized corpora.
    """

    def __init__(self, rng, n_words=4000, n_sentences=2500, n_blocks=1200):
        self.words = tuple(_coin(rng) for _ in range(n_words))
        self._cum = list(itertools.accumulate(1.0 / rank for rank in range(1, n_words + 1)))
        self.sentences = tuple(self._sentence(rng) for _ in range(n_sentences))
        self.blocks = tuple(self._block(rng) for _ in range(n_blocks))
        self.block_mean = sum(map(len, self.blocks)) / n_blocks

    def pick(self, rng, k=1):
        return rng.choices(self.words, cum_weights=self._cum, k=k)

    def _sentence(self, rng):
        text = " ".join(self.pick(rng, rng.randint(5, 20)))
        return text[0].upper() + text[1:] + "."

    def _block(self, rng):
        if rng.random() < 0.2:
            return f"<h2>{rng.choice(self.sentences)}</h2>\n"
        body = " ".join(rng.sample(self.sentences, rng.randint(2, 6)))
        return f'<div class="row"><p class="text">{body}</p></div>\n'


# --- sites and URLs ---------------------------------------------------------------------

class _Site(NamedTuple):
    origin: str       # scheme://host[:port], exactly as it appears in this site's URLs
    host_header: str  # host[:port] for the request's Host header
    dns_name: Optional[str]  # what a dns: record resolves; None for an IP-address host
    ip: str
    nav: tuple        # paths linked from every page, hence crawled again and again
    nav_html: str
    title: str


def _ip(rng):
    return f"{rng.randint(1, 223)}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randint(1, 254)}"


def _mixed_case(host):
    labels = host.split(".")
    return ".".join([label.capitalize() for label in labels[:-1]] + [labels[-1].upper()])


def _host(rng, lex):
    name = "".join(lex.pick(rng, 2))
    if rng.random() < 0.03:
        name = f"xn--{name}-{''.join(rng.choices('abcdefghijklmnopqrstuvwxyz0123456789', k=4))}"
    host = _pick(rng, _SUBDOMAINS) + name + "." + _pick(rng, _TLDS)
    return _mixed_case(host) if rng.random() < 0.04 else host


def _port(rng, scheme):
    r = rng.random()
    if r < 0.03:
        return ":" + rng.choice(("8080", "8443", "8000"))
    if r < 0.05:  # explicit default port: the same URL as without it, once canonicalised
        return ":80" if scheme == "http" else ":443"
    return ""


def _query_value(rng, lex):
    r = rng.random()
    if r < 0.5:
        return str(rng.randrange(10000))
    if r < 0.8:
        return lex.pick(rng)[0]
    if r < 0.95:
        return rng.choice(_ESCAPES).join(lex.pick(rng, 2))
    return ""


def _query(rng, lex):
    # sample() returns keys in random order, so multi-argument queries come unsorted
    keys = rng.sample(_QUERY_KEYS, rng.randint(1, 4))
    return "&".join(f"{key}={_query_value(rng, lex)}" for key in keys)


def _path(rng, lex):
    segments = lex.pick(rng, rng.choice((0, 1, 1, 2, 2, 3, 4)))
    if segments and rng.random() < 0.05:
        i = rng.randrange(len(segments))
        segments[i] = segments[i].upper() if rng.random() < 0.5 else segments[i].capitalize()
    if segments and rng.random() < 0.05:
        segments[-1] = rng.choice(_ESCAPES).join([segments[-1]] + lex.pick(rng))
    path = "/" + "/".join(segments)
    if segments:
        path += _pick(rng, _PATH_ENDINGS)
    if rng.random() < 0.25:
        path += "?" + _query(rng, lex)
    return path


def _make_site(rng, lex):
    scheme = "https" if rng.random() < 0.75 else "http"
    if rng.random() < 0.01:
        host = _ip(rng)
        ip, dns_name = host, None
    else:
        host = _host(rng, lex)
        ip, dns_name = _ip(rng), host.lower()
    port = _port(rng, scheme)
    nav = tuple(_path(rng, lex) for _ in range(rng.randint(4, 20)))
    nav_html = "".join(f'<a href="{escape(p)}">{w}</a> ' for p, w in zip(nav, lex.pick(rng, len(nav))))
    title = " ".join(lex.pick(rng, 3)).title()
    return _Site(f"{scheme}://{host}{port}", host + port, dns_name, ip, nav, nav_html, title)


class World:
    """What all files of one corpus share: the vocabulary and the sites."""

    def __init__(self, seed, hosts, mean_kb):
        rng = random.Random(seed)
        self.seed = seed
        self.mean_bytes = mean_kb * 1024
        self.lex = _Lexicon(rng)
        self.sites = tuple(_make_site(rng, self.lex) for _ in range(hosts))
        # Zipf-like popularity: a few big sites and a long tail, as in a real crawl
        self._site_cum = list(itertools.accumulate(rank ** -0.8 for rank in range(1, hosts + 1)))

    def site(self, rng):
        return rng.choices(self.sites, cum_weights=self._site_cum)[0]

    def link(self, rng):
        site = rng.choice(self.sites)
        return site.origin + rng.choice(site.nav)

    def size(self, rng):
        # mu is shifted by -sigma^2/2 so that mean_kb is the mean, not the median
        return int(min(4_000_000, max(300, rng.lognormvariate(math.log(self.mean_bytes) - 0.5, 1.0))))


# --- payloads ---------------------------------------------------------------------------

def _html_page(rng, world, site, url):
    lex = world.lex
    head = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<title>{site.title} | {" ".join(lex.pick(rng, 2))}</title>\n'
            f'<link rel="canonical" href="{escape(url)}">\n</head><body>\n'
            f'<nav>{site.nav_html}</nav>\n<main data-id="{rng.getrandbits(48)}">\n')
    blocks = rng.choices(lex.blocks, k=max(1, round((world.size(rng) - len(head)) / lex.block_mean)))
    for _ in range(1 + len(blocks) // 8):
        link = f'<p><a href="{escape(world.link(rng))}">{lex.pick(rng)[0]}</a></p>\n'
        blocks.insert(rng.randrange(len(blocks) + 1), link)
    tail = f"</main>\n<footer>&copy; 2024 {site.title}</footer>\n</body></html>\n"
    return (head + "".join(blocks) + tail).encode()


def _plain_text(rng, world, site):
    return "\n".join(rng.choices(world.lex.sentences, k=rng.randint(3, 120))) + "\n"


def _json_doc(rng, world, site):
    items = world.lex.pick(rng, rng.randint(3, 300))
    return json.dumps({"site": site.origin, "count": len(items), "items": items})


def _stylesheet(rng, world, site):
    return "".join(f".{w}{{margin:{rng.randrange(40)}px;color:#{rng.randrange(4096):03x}}}\n"
                   for w in world.lex.pick(rng, rng.randint(5, 400)))


def _script(rng, world, site):
    names = world.lex.pick(rng, rng.randint(3, 150))
    return "".join(f'var {w}{i}="{s}";\n' for i, (w, s) in
                   enumerate(zip(names, rng.choices(world.lex.sentences, k=len(names)))))


def _sitemap(rng, world, site):
    locs = "".join(f"<url><loc>{escape(site.origin + p)}</loc></url>\n" for p in site.nav)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{locs}</urlset>\n')


_TEXT_MAKERS = {"text/plain": _plain_text, "application/json": _json_doc, "text/css": _stylesheet,
                "application/javascript": _script, "application/xml": _sitemap}


def _binary(rng, world, mime):
    magic = _BINARY_MAGIC[mime]
    # random bytes: incompressible, like real images and PDFs
    return magic + rng.randbytes(max(0, world.size(rng) - len(magic)))


def _redirect(rng, world, site, status, reason):
    r = rng.random()
    if r < 0.3:  # relative Location: legal since RFC 7231, and common
        location = _path(rng, world.lex)
    elif r < 0.6:
        location = site.origin + _path(rng, world.lex)
    else:
        location = world.link(rng)
    body = b"" if rng.random() < 0.5 else (
        f"<html><head><title>{status} {reason}</title></head><body><h1>{reason}</h1>"
        f'<p>The document has moved <a href="{escape(location)}">here</a>.</p></body></html>\n').encode()
    return body, [("Location", location)]


def _error_page(rng, world, status, reason):
    blocks = "".join(rng.choices(world.lex.blocks, k=rng.randint(1, 3)))
    return (f"<!DOCTYPE html>\n<html><head><title>{status} {reason}</title></head><body>"
            f"<h1>{reason}</h1>\n{blocks}</body></html>\n").encode()


def _payload(rng, world, site, url, status, reason):
    """(base MIME type, entity body, extra HTTP headers) of a fresh response."""
    if status in (301, 302):
        body, extra = _redirect(rng, world, site, status, reason)
        return "text/html", body, extra
    if status != 200:
        return "text/html", _error_page(rng, world, status, reason), []
    mime = _pick(rng, _PAYLOAD_TYPES)
    if mime in _BINARY_MAGIC:
        return mime, _binary(rng, world, mime), []
    if mime in _HTML_TYPES:
        return mime, _html_page(rng, world, site, url), []
    return mime, _TEXT_MAKERS[mime](rng, world, site).encode(), []


# --- HTTP and capture model -------------------------------------------------------------

def _odd_case(mime):
    kind, sub = mime.split("/")
    return f"{kind.capitalize()}/{sub.upper()}"


def _content_type(rng, mime):
    styles = _BINARY_STYLES if mime in _BINARY_MAGIC else _TEXT_STYLES
    return _pick(rng, styles).format(mime=mime, odd=_odd_case(mime))


def _http_date(when):
    return email.utils.format_datetime(when.replace(microsecond=0), usegmt=True)


def _response_head(rng, status, reason, when, ctype, length, extra):
    fields = [("Date", _http_date(when)), ("Server", _pick(rng, _SERVERS))]
    if ctype is not None:
        fields.append(("Content-Type", ctype))
    fields.append(("Content-Length", str(length)))
    fields.extend(extra)
    if rng.random() < 0.3:
        fields.append(("Last-Modified", _http_date(when - timedelta(days=rng.randint(1, 2000)))))
    if rng.random() < 0.1:  # Common Crawl stores bodies decoded and renames the header so
        fields.append(("X-Crawler-Content-Encoding", "gzip"))
    fields.append(("Connection", "close"))
    if rng.random() < _P_LOWERCASE_HEADERS:  # servers behind HTTP/2 proxies send these
        fields = [(name.lower(), value) for name, value in fields]
    version = "HTTP/1.0" if rng.random() < 0.03 else "HTTP/1.1"
    lines = [f"{version} {status} {reason}"] + [f"{name}: {value}" for name, value in fields]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def sha1_b32(data):
    return base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def timestamp(when):
    return when.strftime("%Y%m%d%H%M%S")


def warc_date(when, frac):
    micros = f".{when.microsecond:06d}" if frac else ""
    return when.strftime("%Y-%m-%dT%H:%M:%S") + micros + "Z"


class _Capture(NamedTuple):
    """One fetch, independent of how it is serialised, so WARC and ARC share it."""
    no: int
    when: datetime
    frac: bool             # whether WARC-Date shows microseconds
    url: str
    target: str            # request-target of the GET line
    host_header: str
    ip: str
    status: int
    mime: str              # base type, for the metadata and WARC-Identified-Payload-Type
    ctype: Optional[str]   # HTTP Content-Type as written, None when left out
    head: bytes            # HTTP status line and headers
    body: bytes            # entity body; for a revisit the original's, which only ARC writes
    digest: str
    identified: bool       # write WARC-Identified-Payload-Type
    payload_digest: bool   # write WARC-Payload-Digest
    original: Optional[tuple]  # (capture no, url, WARC-Date) of the 200 a revisit repeats
    resource: Optional[tuple]  # (url, WARC Content-Type, block) fetched just before
    meta: bytes


def _resource(rng, site, when):
    if site.dns_name and rng.random() < 0.5:
        block = f"{timestamp(when)}\n{site.dns_name}.\t{rng.randint(60, 86400)}\tIN\tA\t{site.ip}\n"
        return f"dns:{site.dns_name}", "text/dns", block.encode()
    dirs = rng.sample(("admin", "cgi-bin", "private", "search", "tmp", "cart"), 3)
    rules = "".join(f"Disallow: /{d}/\n" for d in dirs)
    block = f"User-agent: *\n{rules}\nSitemap: {site.origin}/sitemap.xml\n"
    return site.origin + "/robots.txt", "text/plain", block.encode()


def _metadata(rng, status, mime, length):
    lines = [f"fetchTimeMs: {rng.randint(15, 4000)}"]
    if status == 200 and mime in _HTML_TYPES:
        lines.append("charset-detected: UTF-8")
        lines.append('languages-cld2: {"reliable":true,"text-bytes":%d,"languages":[{"code":"en",'
                     '"code-iso-639-3":"eng","text-covered":0.%02d,"score":%d.0,"name":"ENGLISH"}]}'
                     % (length, rng.randint(50, 99), rng.randint(500, 2000)))
    return ("\r\n".join(lines) + "\r\n").encode()


def _fresh(rng, world, no, when, frac):
    site = world.site(rng)
    target = rng.choice(site.nav) if rng.random() < _P_NAV_PATH else _path(rng, world.lex)
    url = site.origin + target
    status, reason = _pick(rng, _STATUSES)
    mime, body, extra = _payload(rng, world, site, url, status, reason)
    ctype = None if rng.random() < _P_NO_CONTENT_TYPE else _content_type(rng, mime)
    head = _response_head(rng, status, reason, when, ctype, len(body), extra)
    resource = _resource(rng, site, when) if rng.random() < _P_RESOURCE else None
    return _Capture(no=no, when=when, frac=frac, url=url, target=target, host_header=site.host_header,
                    ip=site.ip, status=status, mime=mime, ctype=ctype, head=head, body=body,
                    digest=sha1_b32(body), identified=rng.random() < _P_IDENTIFIED_TYPE,
                    payload_digest=rng.random() >= _P_NO_PAYLOAD_DIGEST, original=None,
                    resource=resource, meta=_metadata(rng, status, mime, len(body)))


def _revisit(rng, no, when, frac, orig):
    head = _response_head(rng, 200, "OK", when, orig.ctype, len(orig.body), [])
    return orig._replace(no=no, when=when, frac=frac, head=head,
                         identified=rng.random() < _P_IDENTIFIED_TYPE, payload_digest=True,
                         original=(orig.no, orig.url, warc_date(orig.when, orig.frac)),
                         resource=None, meta=_metadata(rng, 200, orig.mime, len(orig.body)))


def crawl(world, rng, start, count):
    """``count`` captures of ``world``, fetched from ``start`` on, drawn with ``rng``."""
    when, pool = start, []
    for no in range(count):
        when += timedelta(microseconds=rng.randrange(3_000_000))
        frac = rng.random() < _P_FRACTIONAL_DATE
        if pool and rng.random() < _P_REVISIT:
            yield _revisit(rng, no, when, frac, rng.choice(pool))
            continue
        cap = _fresh(rng, world, no, when, frac)
        if cap.status == 200:
            if len(pool) < _REVISIT_POOL:
                pool.append(cap)
            else:
                pool[rng.randrange(_REVISIT_POOL)] = cap
        yield cap
