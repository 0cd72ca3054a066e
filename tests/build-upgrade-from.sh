#!/bin/sh
# Build rkt and stage1 of an earlier commit of this repository, from its own
# tree with its own Makefile, into <dir>/bin, for TestUpgradeWithRunningPods.
# A script rather than a make recipe: `make -n` runs any recipe line that
# names $(MAKE), and this one starts by removing <dir>.
# Usage: tests/build-upgrade-from.sh <commit> <absolute dir>
set -eu

commit=${1:?usage: build-upgrade-from.sh <commit> <dir>}
dir=${2:?usage: build-upgrade-from.sh <commit> <dir>}
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
	echo "no commit $commit here (not a clone?): TestUpgradeWithRunningPods skips it"
	exit 0
fi
set -x
rm -rf "$dir" && mkdir -p "$dir/src"
git archive "$commit" | tar -x -C "$dir/src"
cd "$dir/src"
./autogen.sh
./configure >/dev/null
make BUILDDIR="$dir" VERSION="$commit" rkt stage1
rm -rf "$dir/src"
