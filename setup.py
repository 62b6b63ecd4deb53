import os
import tempfile

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

# records.GzipMembers' compiled twin. It links to ISA-L where its headers are found
# (Debian/Ubuntu: libisal-dev; Homebrew: isa-l), else inflates with ISA-L through python-isal
# (a dependency: its wheels hold ISA-L), so that it needs no more than a C compiler and
# Python's headers (zlib, which every such machine has, inflates too slowly to be worth it).
# Optional: where it cannot be built the install goes on without it, and indexing runs the
# same in pure Python, slower. WEBARCHIVE_INDEXING_PURE=1 leaves it out on purpose, for a
# wheel that installs anywhere (the EMR launchers build one); WEBARCHIVE_INDEXING_INFLATER=isal
# or python-isal chooses instead of the probe.
PURE = os.environ.get("WEBARCHIVE_INDEXING_PURE") == "1"
MEMBERS = "webarchive_indexing.warc._members"
# What --version says of the pure walker when the compiled one is missing: why (written at
# every install, so that it never tells of an earlier one)
WHY_PURE = "webarchive_indexing/warc/_install.py"
EXTENSIONS = [] if PURE else [
    Extension(MEMBERS, ["webarchive_indexing/warc/_members.c"], optional=True),
    # linecheck's compiled check of CDXJ lines (optional too: the expression is its twin)
    Extension("webarchive_indexing.inputs._linecheck", ["webarchive_indexing/inputs/_linecheck.c"],
              optional=True),
]


def write_why_pure(reason):
    with open(WHY_PURE, "w", encoding="utf-8") as fh:
        fh.write(f"# Written by setup.py at install: why the compiled walker is missing, if it is\n"
                 f"WHY_PURE = {reason!r}\n")


def inflater(compiler, tmp):
    """The inflater: isal if ISA-L's inflate compiles and links here, else python-isal (or as
    the environment says)."""
    chosen = os.environ.get("WEBARCHIVE_INDEXING_INFLATER")
    if chosen:
        if chosen not in ("isal", "python-isal"):
            raise SystemExit(f"WEBARCHIVE_INDEXING_INFLATER={chosen}: say isal or python-isal")
        return chosen
    probe = os.path.join(tmp, "probe.c")
    with open(probe, "w") as fh:
        fh.write("#include <isa-l/igzip_lib.h>\n"
                 "int main(void) { struct inflate_state s; isal_inflate_init(&s); return 0; }\n")
    try:
        objects = compiler.compile([probe], output_dir=tmp)
        compiler.link_executable(objects, "probe", output_dir=tmp, libraries=["isal"])
    except Exception:  # (CompileError, LinkError: ISA-L's headers or library are not here)
        return "python-isal"
    return "isal"


class BuildExt(build_ext):
    """The compiled walker, linked to ISA-L where it is found here."""

    def build_extension(self, ext):
        if ext.name == MEMBERS:
            with tempfile.TemporaryDirectory() as tmp:
                chosen = inflater(self.compiler, tmp)
            if chosen == "isal":
                ext.libraries, ext.define_macros = ["isal"], [("WALKER_ISAL", "1")]
        super().build_extension(ext)


write_why_pure("WEBARCHIVE_INDEXING_PURE=1 at install" if PURE else
               "no C compiler or no Python headers at install: install them (Debian/Ubuntu: "
               "build-essential python3-dev), then reinstall, for the faster compiled one")

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
    cmdclass={"build_ext": BuildExt},
    install_requires=[
        "warcio>=1.7.4",
        "surt>=0.3.1",
        "isal>=1.6",
        # libdeflate: ZipNum blocks (build --block-deflate), a third of zlib-6's time
        "deflate>=0.9",
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
