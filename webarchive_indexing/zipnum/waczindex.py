"""A WACZ's compressed index (``cdxj-gzip-1.0``, WACZ 1.1.1): ``indexes/index.cdx.gz``, gzip
blocks of sorted CDXJ lines (a one-shard ZipNum cluster), and ``indexes/index.idx``, a
``!meta`` line and then one line per block::

    !meta 0 {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}
    com,example)/ 20240101000000 {"offset": 0, "length": 4712, "digest": "sha256:..."}

(the block's first key and timestamp; the byte range of its gzip member; the SHA-256 of the
member, by which a reader checks a block it fetched). ``layout.ShardWriter`` writes the
blocks with ``index_line`` as their index line."""
import hashlib
import json

FORMAT = "cdxj-gzip-1.0"
DATA_NAME = "index.cdx.gz"


def meta_line(data_name=DATA_NAME):
    return b"!meta 0 " + json.dumps({"format": FORMAT, "filename": data_name}).encode() + b"\n"


def index_line(key, member, offset):
    fields = {"offset": offset, "length": len(member),
              "digest": "sha256:" + hashlib.sha256(member).hexdigest()}
    return key + b" " + json.dumps(fields).encode() + b"\n"
