# Settings for scripts/run*.sh. Copy to index_env.sh (or anywhere, and set INDEX_ENV to
# its path), then edit. Bash sources this file; "VAR=${VAR:-value}" lets the environment
# override a value (RUNNER=local scripts/runall.sh). See docs/hadoop-and-emr.md.
# Keep credentials out of here: EMR uses your AWS CLI/boto3 credentials, the nodes their
# instance profile; Hadoop its own configuration.

# -- where to run -----------------------------------------------------------------------
# emr | hadoop | local | inline   (every script also takes -r RUNNER)
RUNNER=${RUNNER:-local}
# mrjob.conf for that runner: copy mrjob.conf.sample and fill in your bucket and roles
MRJOB_CONF=${MRJOB_CONF:-./mrjob.conf}

# -- what to index --------------------------------------------------------------------------
# One archive a line, uncompressed (Hadoop's NLineInputFormat cannot split .gz manifests).
# Common Crawl:  aws s3 cp s3://commoncrawl/crawl-data/CC-MAIN-2024-22/warc.paths.gz - |
#                  gunzip | sed 's|^|s3://commoncrawl/|' > warc.paths
WARC_MANIFEST=${WARC_MANIFEST:-./warc.paths}
# The CDX "filename" of an archive is its path relative to the longest matching root
# (else its base name); several roots separated by blanks.
#   INPUT_ROOT=s3://commoncrawl/   ->  filename crawl-data/CC-MAIN-2024-22/segments/.../x.warc.gz
INPUT_ROOT=${INPUT_ROOT:-}

# -- where the results go -----------------------------------------------------------------
# Local paths work with the local and inline runners (and with a file system every Hadoop
# node mounts); on EMR and Hadoop use s3://bucket/prefix (the jobs write these files
# themselves; on plain Hadoop the scripts hand the same objects to Hadoop as s3a://).
#   CDX_DIR=s3://your-bucket/CC-MAIN-2024-22/cdx
CDX_DIR=${CDX_DIR:-./out/cdx}
SPLITS_DIR=${SPLITS_DIR:-./out}
# A new directory for every build: the scripts refuse one that holds cluster.idx already.
CLUSTER_DIR=${CLUSTER_DIR:-./out/cluster}
# Where readers will find the shards, written into cluster.loc (default: beside it,
# relative to it), e.g. CLUSTER_LOCATION=s3://your-bucket/CC-MAIN-2024-22/cluster
CLUSTER_LOCATION=${CLUSTER_LOCATION:-}

# -- the cluster ----------------------------------------------------------------------------
SHARDS=${SHARDS:-4}                       # Common Crawl: 300
LINES_PER_BLOCK=${LINES_PER_BLOCK:-3000}  # Common Crawl and the Internet Archive: 3000

# -- remote copy (scripts/runremotecopy.sh, see docs/remote-copy.md) ------------------------
# The cluster to select from, what to select, where the archives and the extract are:
# COPY_CLUSTER=s3://commoncrawl/cc-index/collections/CC-MAIN-2024-22/indexes/cluster.idx
# COPY_DOMAINS=example.com,example.org/blog*      # and/or one input a line in:
# COPY_DOMAINS_FILE=./domains.txt
# COPY_RECORDS_CSV=./records.csv  # instead of the three above: the records of a SQL result
# COPY_OUTPUT=s3://your-bucket/extracts/example   # s3:// on emr and hadoop
# WARC_PREFIX=s3://commoncrawl/                   # what the CDX filename is relative to
# RECORDS_PER_FILE=10000   # records per output WARC file
# NAME_PREFIX=extract      # output files NAME-NNNNN.warc.gz
# COPY_THREADS=16          # range requests in flight per task
# COPY_RETRIES=5           # further reads of a record after transient errors
# COPY_ARGS=()             # more arguments of the copy job

# -- optional -------------------------------------------------------------------------------
# CDX_FORMAT=cdxj          # or cdx11
# ON_ERROR=skip            # index what is readable and report problems (default: fail)
# PYTHON=python3.11        # interpreter that runs the jobs here (default python3)
# CDX_INPUT=s3://your-bucket/CC-MAIN-2024-22/cdx/   # what steps 2 and 3 read, if not CDX_DIR
# More arguments, as bash arrays (or blank-separated words): for every job, or for one.
# EXTRA_ARGS=(--label cc-main-2024-22)
# INDEX_ARGS=(--no-skip-existing)
# SAMPLE_ARGS=(--scaler 100)
# CLUSTER_ARGS=(--block-deflate zlib-6)   # blocks as the original jobs wrote them (default libdeflate-5)
# EMR: bootstrap.sh installs the wheel built from this checkout into WHEEL_DIR
# (default build/emr-wheels; other wheels put there are offered to pip as well).
# WHEEL_DIR=./build/emr-wheels
# BUILD_WHEEL=0            # keep the wheel already in WHEEL_DIR
