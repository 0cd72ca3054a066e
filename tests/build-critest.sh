#!/bin/sh
# Build critest (a ginkgo test binary) from the cri-tools module.
# Usage: tests/build-critest.sh <cri-tools version> <absolute tools dir>
# `go install` cannot build it ("no non-test Go files"): download the module,
# copy it somewhere writable and compile the test package with `go test -c`.
set -eu

version=${1:?usage: build-critest.sh <version> <tools dir>}
tools=${2:?usage: build-critest.sh <version> <tools dir>}
go=${GO:-go}

mkdir -p "$tools"
moddir=$("$go" mod download -json "sigs.k8s.io/cri-tools@$version" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$moddir" ] || [ ! -d "$moddir" ]; then
	echo "build-critest.sh: cannot download sigs.k8s.io/cri-tools@$version" >&2
	exit 1
fi

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp -r "$moddir" "$work/cri-tools"
chmod -R u+w "$work/cri-tools"
cd "$work/cri-tools"
# Build outside any enclosing module or workspace, with the module's own go.sum.
GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 "$go" test -c -o "$tools/critest.tmp" ./cmd/critest
mv "$tools/critest.tmp" "$tools/critest"
echo "built $tools/critest"
