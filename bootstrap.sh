#!/bin/bash
# Install Python 3.11 and this package (with its dependencies) on a cluster node.
#
# EMR 7.x (Amazon Linux 2023): mrjob.conf.sample runs it as a bootstrap action on every
# node, with the wheel that scripts/run*.sh build from the checkout:
#     sudo bash $WEBARCHIVE_INDEXING_HOME/bootstrap.sh# $WEBARCHIVE_INDEXING_WHEELS/#
# Other Hadoop clusters: run it on every node (or do the same with your tools):
#     sudo bash bootstrap.sh DIR_WITH_WHEELS
#
# Amazon Linux 2023's python3 is 3.9; the package needs 3.11 or newer, so the jobs run with
# python3.11 (python_bin in mrjob.conf). Dependencies come from PyPI, or from wheels put
# next to the package wheel (offline clusters). PYTHON overrides the interpreter.
set -euo pipefail

WHEELS=${1:-}
if [ -z "$WHEELS" ] || [ ! -d "$WHEELS" ]; then
    echo "usage: bootstrap.sh WHEEL_DIR   (the directory holding webarchive_indexing-*.whl)" >&2
    exit 2
fi
PYTHON=${PYTHON:-python3.11}

if ! command -v "$PYTHON" >/dev/null 2>&1; then
    if command -v dnf >/dev/null 2>&1; then
        dnf install -y -q python3.11 python3.11-pip
    elif command -v yum >/dev/null 2>&1; then
        yum install -y -q python3.11 python3.11-pip
    else
        echo "bootstrap.sh: $PYTHON not found and no dnf/yum to install it; set PYTHON" >&2
        exit 1
    fi
fi
"$PYTHON" -m pip --version >/dev/null 2>&1 || "$PYTHON" -m ensurepip --upgrade

shopt -s nullglob
PACKAGE=("$WHEELS"/webarchive_indexing-*.whl)
if [ ${#PACKAGE[@]} -ne 1 ]; then
    echo "bootstrap.sh: expected one webarchive_indexing-*.whl in $WHEELS, found ${#PACKAGE[@]}" >&2
    exit 1
fi

# as root, into the interpreter's site-packages, where the YARN containers' python finds it
PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "$PYTHON" -m pip install --quiet --no-cache-dir --find-links "$WHEELS" "${PACKAGE[0]}"
"$PYTHON" -c "import mrjob, warcio, surt, isal, zstandard, webarchive_indexing.jobs.zip_cluster"
echo "bootstrap.sh: installed $(basename "${PACKAGE[0]}") for $("$PYTHON" -V 2>&1)"
