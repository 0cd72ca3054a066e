#!/bin/sh
# Prints the Debian version of the tree: X.Y.Z from a release tag vX.Y.Z
# (X.Y.Z+gitN.HASH N commits after it; a pre-release tag vX.Y.Z-rc1 is
# X.Y.Z~rc1, which sorts below X.Y.Z), else 2.0.0~gitN.HASH, which sorts
# above the rkt 1.x packages it replaces and below a 2.0.0 release.
cd "$(dirname "$0")/../.." || exit 1
if d=$(git describe --tags --match 'v[0-9]*' 2>/dev/null); then
	echo "${d#v}" | sed -e 's/-\([0-9]*\)-g/+git\1./' -e 's/-/~/g'
elif n=$(git rev-list --count HEAD 2>/dev/null); then
	echo "2.0.0~git$n.$(git rev-parse --short HEAD)"
else
	echo "2.0.0~dev"
fi
