#!/usr/bin/env bash
# Builds benchstat, pinned, into $1 (the binary cache), so that tests can
# check that bench.txt is what benchstat reads. Its own stamp keeps it out
# of build.sh's, whose change would rebuild the whole control plane.
set -euo pipefail

out=${1:?usage: benchstat.sh OUT_DIR}
version=v0.0.0-20260908200009-22c9c6c9d4da # golang.org/x/perf
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -x "$out/benchstat" ] && [ "$(cat "$out/.benchstat.stamp" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
echo "building benchstat $version" >&2
gobin=$(mktemp -d)
CGO_ENABLED=0 GOBIN="$gobin" go install -trimpath "golang.org/x/perf/cmd/benchstat@$version"
mv "$gobin/benchstat" "$out/benchstat" && rmdir "$gobin"
echo "$version" > "$out/.benchstat.stamp"
