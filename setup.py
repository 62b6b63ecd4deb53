import os

from setuptools import Extension, find_packages, setup

# records.GzipMembers' compiled twin, linked to ISA-L (Debian/Ubuntu: libisal-dev; Homebrew:
# isa-l). Optional: where it cannot be built the install goes on without it, and indexing
# runs the same in pure Python, slower. WEBARCHIVE_INDEXING_PURE=1 leaves it out on purpose,
# for a wheel that installs anywhere (the EMR launchers build one).
EXTENSIONS = [] if os.environ.get("WEBARCHIVE_INDEXING_PURE") == "1" else [
    Extension("webarchive_indexing.warc._members", ["webarchive_indexing/warc/_members.c"],
              libraries=["isal"], optional=True),
]

setup(
    name="webarchive-indexing",
    version="0.1.0",
    description="Index WARC/ARC collections into ZipNum CDX clusters readable by pywb, "
                "OpenWayback and Common Crawl's index server",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.11",
    # the MRJob jobs live in jobs/ beside setup.py, and install as webarchive_indexing.jobs
    packages=find_packages(include=["webarchive_indexing", "webarchive_indexing.*"])
    + ["webarchive_indexing.jobs"],
    package_dir={"webarchive_indexing": "webarchive_indexing", "webarchive_indexing.jobs": "jobs"},
    ext_modules=EXTENSIONS,
    install_requires=[
        "warcio>=1.7.4",
        "surt>=0.3.1",
        "isal>=1.6",
        # .warc.zst (reading, recompress, zstd-dict)
        "zstandard>=0.22",
        # CDX API filters' regular expressions: Python's re, with a time limit on a match
        "regex",
        "mrjob>=0.7.4",
        # s3:// inputs and outputs
        "boto3",
        # the columnar index (export --format parquet): Parquet files, and the public suffix
        # list (its bundled snapshot) for the registered-domain columns
        "pyarrow>=14",
        "tldextract>=5",
        # mrjob 0.7.4 imports distutils, gone from the standard library since Python 3.12;
        # 70.1+ also builds wheels by itself (the EMR launchers build this package's wheel)
        "setuptools>=70.1",
    ],
    extras_require={
        "test": ["pytest>=7",
                 # make test runs on every core, the modules sharing a Hadoop on one
                 "pytest-xdist>=3.5", "pywb==2.10.0", "cdxj-indexer==1.5.0", "pyspark>=3.5",
                 # reads the columnar index back, as its users do
                 "duckdb",
                 # serve's real clients, and its search page driven in Chromium (Debian's
                 # chromium and chromium-driver, installed by .ci/run)
                 "cdx_toolkit", "selenium",
                 # a local S3 API server for the S3 tests
                 "moto[server]",
                 # an independent reader and writer of .warc.zst
                 "fastwarc>=2.0",
                 # py-wacz: WACZ files as their makers write them (WACZ inputs), and the
                 # validator and maker our WACZ packages are checked against
                 "wacz==0.6.0",
                 # pywb 2.10 imports cgi, removed from the standard library in 3.13
                 'legacy-cgi; python_version >= "3.13"'],
        # bench/run.py: zlib-ng's gzip is one of the reference decompression floors
        "bench": ["zlib-ng"],
    },
    entry_points={"console_scripts": ["webarchive-index=webarchive_indexing.cli:main"]},
)
