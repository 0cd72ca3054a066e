#!/bin/sh
# Builds the Kubernetes node e2e pieces from the Go module proxy, pinned by
# wrapper/go.mod: kubelet, e2e_node.test, agnhost, the ginkgo CLI and nnp (nonewprivs).
# Usage: build-k8s.sh <out dir> [kubelet|e2e_node.test|agnhost|ginkgo|nnp ...]
# (default: all). A binary already in <out dir> newer than wrapper/go.sum
# is kept, so reruns are instant.
set -eu

out=${1:?usage: build-k8s.sh <out dir> [binary ...]}
shift
[ $# -gt 0 ] || set -- kubelet e2e_node.test agnhost ginkgo nnp
go=${GO:-go}
wrapper=$(cd "$(dirname "$0")/wrapper" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

cd "$wrapper"
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0

for b in "$@"; do
	if [ -x "$out/$b" ] && [ "$out/$b" -nt go.sum ]; then
		continue
	fi
	start=$(date +%s)
	case $b in
	kubelet) "$go" build -trimpath -ldflags='-s -w' -o "$out/$b.tmp" k8s.io/kubernetes/cmd/kubelet ;;
	agnhost) "$go" build -trimpath -ldflags='-s -w' -o "$out/$b.tmp" k8s.io/kubernetes/test/images/agnhost ;;
	ginkgo) "$go" build -trimpath -ldflags='-s -w' -o "$out/$b.tmp" github.com/onsi/ginkgo/v2/ginkgo ;;
	nnp) "$go" build -trimpath -ldflags='-s -w' -o "$out/$b.tmp" k8s.io/kubernetes/test/images/nonewprivs ;;
	e2e_node.test) "$go" test -c -trimpath -ldflags='-s -w' -o "$out/$b.tmp" k8s.io/kubernetes/test/e2e_node ;;
	*) echo "build-k8s.sh: unknown binary $b" >&2; exit 2 ;;
	esac
	mv "$out/$b.tmp" "$out/$b"
	echo "built $out/$b in $(( $(date +%s) - start ))s"
done
