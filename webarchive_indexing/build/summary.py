"""What a build or ``cdx -o`` did (``Summary``), as their reports show it: apart from
``commands.build``, so that ``cdx -o`` counts its archives without loading the engines."""
from dataclasses import dataclass, field

from .. import storage


@dataclass
class Summary:
    out_dir: str
    archives: int = 0
    archives_skipped: int = 0
    archives_reindexed: int = 0   # CDX files made again: stale (see cdxmeta.stale)
    indexes: int = 0
    index_lines: int = 0
    records: int = 0
    lines: int = 0
    input_bytes: int = 0
    shards: int = 0
    blocks: int = 0
    cluster_bytes: int = 0
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    seconds: float = 0.0
    published: bool = False
    update: object = None         # an Update, for an update
    cluster_lines: int = 0
    report: str = None            # errors.json, where written
    table: object = None          # with --parquet: the columnar.TableSummary of the table

    @property
    def cluster_dir(self):
        return storage.join(self.out_dir, "cluster")

    def add(self, status):
        """Count in the ``tasks.IndexStatus`` of one archive (``tasks.index_archive``)."""
        self.archives += 1
        self.archives_skipped += status.skipped
        self.records += status.records
        self.lines += status.lines
        self.input_bytes += status.bytes
        self.errors += status.errors
        self.warnings += status.warnings
        if status.stale:
            self.archives_reindexed += 1
            self.warnings.append({"file": status.path, "offset": 0,
                                  "message": f"indexed again: {status.stale}"})
