#!/usr/bin/env bash
# Fetch the Apache Hadoop jars that pom.xml names from Maven Central (with mvn) into
# $HADOOP_LOCAL_HOME/lib (default ~/.cache/webarchive-indexing/hadoop-VERSION), for the
# `hadoop` command of bin/ and pseudo-cluster.sh. A second run finds them and does
# nothing; a run that stopped half way left no lib/ and starts again.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=home.sh
source "$HERE/home.sh"
if [ -f "$HADOOP_LOCAL_HOME/lib/.complete" ] && cmp -s "$HERE/pom.xml" "$HADOOP_LOCAL_HOME/lib/.complete"; then
    exit 0
fi
command -v mvn >/dev/null 2>&1 || { echo "fetch.sh: mvn not found: install Maven (Debian: apt-get install maven)" >&2; exit 1; }
mkdir -p "$HADOOP_LOCAL_HOME"
rm -rf "$HADOOP_LOCAL_HOME/lib" "$HADOOP_LOCAL_HOME/lib.partial"
echo "fetch.sh: fetching Hadoop $HADOOP_LOCAL_VERSION from Maven Central into $HADOOP_LOCAL_HOME/lib" >&2
mvn -B -q -Dstyle.color=never -f "$HERE/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$HADOOP_LOCAL_HOME/lib.partial" >&2
cp "$HERE/pom.xml" "$HADOOP_LOCAL_HOME/lib.partial/.complete"
mv "$HADOOP_LOCAL_HOME/lib.partial" "$HADOOP_LOCAL_HOME/lib"
echo "fetch.sh: $(ls "$HADOOP_LOCAL_HOME/lib" | wc -l) jars in $HADOOP_LOCAL_HOME/lib" >&2
