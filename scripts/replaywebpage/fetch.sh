#!/usr/bin/env bash
# Fetch ReplayWeb.page (its npm package: ui.js, the viewer, and sw.js, the service worker
# that reads a WACZ by ranged requests) into $REPLAYWEBPAGE_HOME (default
# ~/.cache/webarchive-indexing/replaywebpage-VERSION), for the tests that replay our WACZ
# packages in a browser. A second run finds it and does nothing.
set -euo pipefail
VERSION=2.5.3
HOME_DIR=${REPLAYWEBPAGE_HOME:-$HOME/.cache/webarchive-indexing/replaywebpage-$VERSION}
if [ -f "$HOME_DIR/.complete" ]; then
    echo "$HOME_DIR"
    exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "fetch.sh: npm not found: install Node.js and npm (Debian: apt-get install npm)" >&2; exit 1; }
rm -rf "$HOME_DIR" "$HOME_DIR.partial"
mkdir -p "$HOME_DIR.partial"
( cd "$HOME_DIR.partial" && npm pack --silent "replaywebpage@$VERSION" >/dev/null \
  && tar xzf "replaywebpage-$VERSION.tgz" --strip-components=1 package/ui.js package/sw.js package/LICENSE \
  && rm "replaywebpage-$VERSION.tgz" )
touch "$HOME_DIR.partial/.complete"
mv "$HOME_DIR.partial" "$HOME_DIR"
echo "$HOME_DIR"
