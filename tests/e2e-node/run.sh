#!/bin/bash
# Runs the Kubernetes node e2e suite (test/e2e_node) against rkt
# kubelet-service or Debian's containerd, with the stand-in images on a
# loopback registry. Built by `make e2e-node`, which calls this; see
# Documentation/node-conformance.md.
#
# Environment: RUNTIME (rkt|containerd), E2E_FOCUS, E2E_SKIP, E2E_PROCS,
# E2E_OUT (default build/e2e-node), RKT_BIN, RKT_STAGE1, CRICTL, E2E_TIMEOUT.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
runtime=${RUNTIME:-rkt}
focus=${E2E_FOCUS:-'\[NodeConformance\]'}
skip=${E2E_SKIP:-'\[Flaky\]|\[Slow\]|\[Serial\]'}
procs=${E2E_PROCS:-4}
out=${E2E_OUT:-$top/build/e2e-node}
bin=$out/bin
run=$out/run-$runtime
regport=${E2E_REGISTRY_PORT:-5000}
# Both runtimes get the same bridge network (of this run only) and the
# RuntimeClass handler "test-handler" the suite's RuntimeClass specs use.
bridge=e2ebr0
subnet=10.217.0.0/16

case $runtime in rkt | containerd) ;; *) echo "RUNTIME must be rkt or containerd" >&2; exit 2 ;; esac
for p in 6443 10248 10250 10255 "$regport"; do
	if ss -Hltn "sport = :$p" | grep -q .; then
		echo "run.sh: port $p is in use (one node e2e run at a time)" >&2
		exit 1
	fi
done

crictl=${CRICTL:-$top/build/tools/crictl}
if [ -d "$run" ] && grep -q " $run/" /proc/self/mounts; then
	echo "run.sh: $run still has mounts (pods of an interrupted run?); remove them first" >&2
	exit 1
fi
rm -rf "$run"
mkdir -p "$run/report" "$run/net.d" "$run/path"
pids=()
# The sysctls the kubelet and the CNI bridge change, restored at exit.
sysctls=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops
	kernel/keys/root_maxkeys kernel/keys/root_maxbytes net/ipv4/ip_forward)
declare -A saved
for s in "${sysctls[@]}"; do saved[$s]=$(cat "/proc/sys/$s"); done

# remove_nat_rules deletes the NAT rules of this run's network (CNI comment
# name "e2e-node") that pods whose network teardown never ran left behind.
remove_nat_rules() {
	local n chains c
	chains=$(iptables -t nat -S POSTROUTING | grep -F 'name: \"e2e-node\"' | grep -o 'CNI-[0-9a-f]*' || true)
	for n in $(iptables -t nat -L POSTROUTING -n --line-numbers | grep -F '"e2e-node"' | awk '{print $1}' | sort -rn); do
		iptables -t nat -D POSTROUTING "$n"
	done
	for c in $chains; do
		iptables -t nat -F "$c" 2>/dev/null && iptables -t nat -X "$c" 2>/dev/null || true
	done
}

cleanup() {
	local i
	# The suite's last pods may outlive the kubelet: remove them through the
	# CRI (stage1 keeps rkt pods running without the service).
	if [ -S "${sock:-}" ]; then
		"$crictl" -t 2m -r "unix://$sock" -i "unix://$sock" rmp -a -f >"$run/cleanup.log" 2>&1 || true
	fi
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[$i]}" 2>/dev/null || true
		wait "${pids[$i]}" 2>/dev/null || true
	done
	if [ "$runtime" = containerd ]; then
		# shims outlive containerd: stop the ones of this run's state dir
		for p in $(pgrep -f "containerd-shim-runc-v2 .*-address $run/containerd.sock" || true); do
			kill -KILL "$p" 2>/dev/null || true
		done
		umount -R "$run/containerd" 2>/dev/null || true
		grep -o " $run/containerd[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount 2>/dev/null || true
	fi
	ip link del "$bridge" 2>/dev/null || true
	remove_nat_rules
	[ -z "${cadvisor_link:-}" ] || rm -f "$cadvisor_link"
	for s in "${sysctls[@]}"; do echo "${saved[$s]}" >"/proc/sys/$s" 2>/dev/null || true; done
}
trap cleanup EXIT

wait_for() { # wait_for WHAT SECONDS CMD...
	local what=$1 n=$(($2 * 10))
	shift 2
	until "$@" >/dev/null 2>&1; do
		n=$((n - 1))
		if [ $n -le 0 ]; then echo "run.sh: $what did not come up" >&2; return 1; fi
		sleep 0.1
	done
}

"$bin/registry" -addr "127.0.0.1:$regport" -images "$out/images/images.json" >"$run/registry.log" 2>&1 &
pids+=($!)
wait_for registry 120 curl -sf "http://127.0.0.1:$regport/v2/e2e-test-images/busybox/tags/list"

cat >"$run/net.d/10-e2e.conflist" <<JSON
{"cniVersion": "1.0.0", "name": "e2e-node",
 "plugins": [
  {"type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$subnet"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true}]}
JSON

if [ "$runtime" = rkt ]; then
	rkt=${RKT_BIN:-$top/build/bin/rkt}
	stage1=${RKT_STAGE1:-$top/build/bin/stage1}
	sock=$run/rkt.sock
	mkdir -p "$run/rkt-config/registries.d"
	# registries are reached through the loopback registry only: no
	# fallback to the real one, and the image-pull specs' invalid registry
	# is blocked (no DNS query leaves the host)
	cat >"$run/rkt-config/registries.d/e2e.json" <<JSON
{"rktKind": "registryMirror", "rktVersion": "v1", "registry": "registry.k8s.io",
 "mirrors": [{"endpoint": "127.0.0.1:$regport", "insecure": true}], "upstream": false}
JSON
	cat >"$run/rkt-config/registries.d/invalid.json" <<JSON
{"rktKind": "registryMirror", "rktVersion": "v1", "registry": "invalid.registry.k8s.io",
 "mirrors": [], "upstream": false}
JSON
	"$rkt" --dir "$run/rkt-data" --local-config "$run/rkt-config" kubelet-service \
		--socket "$sock" --socket-group root --stage1-path "$stage1" \
		--cni-conf-dir "$run/net.d" --cgroup-parent /rkt-e2e-node \
		--runtime-handler test-handler >"$run/runtime.log" 2>&1 &
	pids+=($!)
else
	sock=$run/containerd.sock
	# the same for containerd: the server is the loopback registry, and
	# the invalid registry a closed loopback port
	mkdir -p "$run/certs.d/registry.k8s.io" "$run/certs.d/invalid.registry.k8s.io"
	# (containerd 1.6 rejects a hosts.toml without a host tree, then falls
	# back to the registry itself)
	cat >"$run/certs.d/registry.k8s.io/hosts.toml" <<TOML
server = "http://127.0.0.1:$regport"
[host."http://127.0.0.1:$regport"]
  capabilities = ["pull", "resolve"]
TOML
	cat >"$run/certs.d/invalid.registry.k8s.io/hosts.toml" <<TOML
server = "http://127.0.0.1:1"
[host."http://127.0.0.1:1"]
  capabilities = ["pull", "resolve"]
TOML
	cat >"$run/containerd.toml" <<TOML
version = 2
root = "$run/containerd/root"
state = "$run/containerd/state"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10.2"
  # root here lacks CAP_SYS_RESOURCE: no oom_score_adj below containerd's own
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$run/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$run/certs.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.test-handler]
    runtime_type = "io.containerd.runc.v2"
TOML
	containerd --config "$run/containerd.toml" >"$run/runtime.log" 2>&1 &
	pids+=($!)
	# The kubelet's cAdvisor finds containerd's containers only through
	# /run/containerd/containerd.sock.
	if [ ! -e /run/containerd/containerd.sock ]; then
		mkdir -p /run/containerd
		ln -s "$sock" /run/containerd/containerd.sock
		cadvisor_link=/run/containerd/containerd.sock
	fi
fi
wait_for "$runtime" 60 test -S "$sock"

# The suite runs the kubelet under systemd-run when it finds it on PATH,
# which fails without systemd as PID 1: hide it.
for f in /usr/bin/*; do
	[ "${f##*/}" = systemd-run ] || ln -s "$f" "$run/path/${f##*/}"
done
export PATH=$run/path:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin

cat >"$run/kubelet-base.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /
failCgroupV1: false
failSwapOn: false
oomScoreAdj: 0
protectKernelDefaults: false
podCIDR: $subnet
serializeImagePulls: false
fileCheckFrequency: 10s
volumeStatsAggPeriod: 10s
evictionPressureTransitionPeriod: 30s
evictionHard:
  memory.available: 250Mi
  nodefs.available: 2%
  imagefs.available: 2%
  nodefs.inodesFree: 2%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
YAML

# --system-cgroups=/system would move every process of the root cgroup (PID 1
# included) there; the kubelet and runtime cgroups go with it.
kflags="--system-cgroups= --kubelet-cgroups= --runtime-cgroups="
# cAdvisor knows only containerd's and CRI-O's containers: for rkt the suite
# and its kubelet take pod and container stats from the CRI (and the suite
# skips its /metrics/cadvisor spec, as upstream does in that mode).
gates=
[ "$runtime" = rkt ] && gates=--feature-gates=PodAndContainerStatsFromCRI=true

cd "$run"
status=0
"$bin/ginkgo" --procs="$procs" --focus="$focus" --skip="$skip" --timeout="${E2E_TIMEOUT:-3h}" \
	--no-color --output-dir="$run/report" --junit-report=junit.xml --json-report=report.json \
	"$bin/e2e_node.test" -- \
	--container-runtime-endpoint="unix://$sock" --image-service-endpoint="unix://$sock" \
	--prepull-images=false --kubelet-config-file="$run/kubelet-base.yaml" ${gates:+"$gates"} \
	--kubelet-flags="$kflags" \
	--report-dir="$run/report" --node-name="$(hostname)" \
	>"$run/ginkgo.log" 2>&1 || status=$?
"$bin/e2e-summary" -runtime "$runtime" "$run/report/report.json" | tee "$run/summary.txt"
exit $status
