#!/bin/sh
# Build criu (Debian's upstream tarball, sha256-pinned) and install only the
# criu binary as <tools dir>/criu. Debian 12's criu 3.17.1 does not start on
# recent kernels ("vdso: Unexpected rt vDSO area bounds"); 4.1.1's dump hangs
# on 6.18 (waiting for the task to trap after the parasite's sigreturn);
# 4.2.1 works on both.
# Build dependencies: .ci/install-deps. Usage: tests/build-criu.sh <absolute tools dir>
set -eu

tools=${1:?usage: build-criu.sh <tools dir>}
ver=4.2.1
sha256=29ec0ee09e296479fe7048c80980e8ef1d0684d0b0204c2b101dfea19f6725b9
url=http://deb.debian.org/debian/pool/main/c/criu/criu_$ver.orig.tar.xz

mkdir -p "$tools"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
curl -fsSL -o criu.tar.xz "$url"
echo "$sha256  criu.tar.xz" | sha256sum -c - >/dev/null
tar xf criu.tar.xz
if ! make -C "criu-$ver" -j"$(nproc)" criu >build.log 2>&1; then
	tail -n 40 build.log >&2
	echo "build-criu.sh: cannot build criu $ver" >&2
	exit 1
fi
install -m 0755 "criu-$ver/criu/criu" "$tools/criu.tmp"
mv "$tools/criu.tmp" "$tools/criu"
"$tools/criu" --version
