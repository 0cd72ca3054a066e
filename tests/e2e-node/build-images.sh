#!/bin/bash
# Builds the stand-in images the [NodeConformance] specs use, offline (Debian
# packages and binaries from build-k8s.sh), as one layer tar each plus
# images.json, served by tests/e2e-node/registry under the upstream names.
# Usage: build-images.sh <out dir> <k8s bin dir (agnhost, nnp)>
# Needs: gcc, libc6-dev, dpkg-dev, curl, netcat-openbsd, hostname (.ci/install-deps).
set -euo pipefail

out=${1:?usage: build-images.sh <out dir> <k8s bin dir>}
bin=${2:?usage: build-images.sh <out dir> <k8s bin dir>}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$(cd "$bin" && pwd)
k8s=$(cd "$here/wrapper" && GOWORK=off GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' k8s.io/kubernetes)

# busybox from Debian's source package with the upstream defconfig, static,
# with FEATURE_DI_ENV_HACK so that sh passes environment variables whose
# names are not shell identifiers (data-1) on to its children, as the
# upstream image's does. Debian's binary packages lack nmeter and that.
build_busybox() {
	local bb=$out/busybox
	[ -x "$bb/busybox" ] && return
	local work
	work=$(mktemp -d)
	mkdir -p "$work/parts" "$work/lists/partial"
	cat >"$work/parts/src.sources" <<-SRC
	Types: deb-src
	URIs: http://deb.debian.org/debian
	Suites: bookworm
	Components: main
	Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	SRC
	local o=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$work/parts"
		-o "Dir::State::Lists=$work/lists" -o APT::Sandbox::User=root)
	apt-get "${o[@]}" -qq update
	(cd "$work" && apt-get "${o[@]}" -qq source --download-only busybox >/dev/null &&
		dpkg-source -x busybox_*.dsc src >/dev/null 2>&1)
	(cd "$work/src" && make -s defconfig >/dev/null &&
		sed -i -e 's/^# CONFIG_STATIC is not set/CONFIG_STATIC=y/' \
			-e 's/^# CONFIG_FEATURE_DI_ENV_HACK is not set/CONFIG_FEATURE_DI_ENV_HACK=y/' .config &&
		make -s -j"$(nproc)" busybox >/dev/null 2>&1)
	mkdir -p "$bb"
	cp "$work/src/busybox" "$bb/busybox.tmp"
	rm -rf "$work"
	# Both behaviours the specs rely on.
	env 'data-1=value-1' "$bb/busybox.tmp" sh -c env | grep -qx 'data-1=value-1'
	"$bb/busybox.tmp" --list | grep -qx nmeter
	mv "$bb/busybox.tmp" "$bb/busybox"
}

# base_rootfs DIR: busybox with every applet hard-linked in /bin, as upstream.
base_rootfs() {
	local r=$1
	rm -rf "$r"
	mkdir -p "$r"/{bin,etc,root,tmp,var/spool/mail,home,usr/bin,usr/sbin,usr/local/bin}
	chmod 1777 "$r/tmp"
	chmod 0700 "$r/root"
	cp "$out/busybox/busybox" "$r/bin/busybox"
	local a
	for a in $("$r/bin/busybox" --list); do
		[ "$a" = busybox ] || ln "$r/bin/busybox" "$r/bin/$a"
	done
	cat >"$r/etc/passwd" <<-P
	root:x:0:0:root:/root:/bin/sh
	daemon:x:1:1:daemon:/usr/sbin:/bin/false
	bin:x:2:2:bin:/bin:/bin/false
	sys:x:3:3:sys:/dev:/bin/false
	sync:x:4:100:sync:/bin:/bin/sync
	mail:x:8:8:mail:/var/spool/mail:/bin/false
	www-data:x:33:33:www-data:/var/www:/bin/false
	operator:x:37:37:Operator:/var:/bin/false
	nobody:x:65534:65534:nobody:/home:/bin/false
	P
	cat >"$r/etc/group" <<-G
	root:x:0:
	daemon:x:1:
	bin:x:2:
	sys:x:3:
	adm:x:4:
	tty:x:5:
	disk:x:6:
	wheel:x:10:root
	mail:x:8:
	www-data:x:33:
	operator:x:37:
	users:x:100:
	nogroup:x:65534:
	G
	printf 'hosts: files dns\n' >"$r/etc/nsswitch.conf"
}

# add_host_binary ROOTFS PATH [DEST]: a binary of this host and the shared
# libraries it loads.
add_host_binary() {
	local r=$1 src=$2 dest=${3:-$2} lib
	mkdir -p "$r$(dirname "$dest")"
	cp -L "$src" "$r$dest"
	for lib in $(ldd "$src" | grep -o '/[^ ]*'); do
		mkdir -p "$r$(dirname "$lib")"
		cp -L "$lib" "$r$lib"
	done
}

# layer NAME: the rootfs of NAME as an uncompressed tar, owned by root.
layer() {
	tar --numeric-owner --owner=0 --group=0 --sort=name --mtime=@0 \
		-C "$out/rootfs/$1" -cf "$out/$1.tar" .
}

build_busybox
mkdir -p "$out/rootfs"
path='PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

base_rootfs "$out/rootfs/busybox"
layer busybox

r=$out/rootfs/agnhost
base_rootfs "$r"
cp "$bin/agnhost" "$r/agnhost"
ln -s agnhost "$r/agnhost-2"
cp "$k8s/test/images/agnhost/porter/localhost.crt" "$k8s/test/images/agnhost/porter/localhost.key" "$r/"
chmod 0644 "$r/localhost.crt" "$r/localhost.key"
mkdir -p "$r/uploads"
add_host_binary "$r" /usr/bin/curl
add_host_binary "$r" /bin/nc.openbsd /usr/bin/nc
add_host_binary "$r" /bin/bash /bin/bash
echo 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >>"$r/etc/passwd"
printf 'user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n' >>"$r/etc/group"
mkdir -p "$r/home/user-defined-in-image"
layer agnhost

r=$out/rootfs/nginx
base_rootfs "$r"
mkdir -p "$r/usr/share/nginx/html"
echo '<html><body>Welcome to nginx!</body></html>' >"$r/usr/share/nginx/html/index.html"
layer nginx

r=$out/rootfs/nonewprivs
base_rootfs "$r"
install -m 4755 "$bin/nnp" "$r/usr/local/bin/nnp"
layer nonewprivs

r=$out/rootfs/glibc-dns-testing
base_rootfs "$r"
rm "$r/bin/hostname"
add_host_binary "$r" /bin/hostname /bin/hostname
layer glibc-dns-testing

# kitten: what the ImageVolume specs read of the image they mount (its
# data.json naming kitten.jpg, an Alpine os-release, root in etc/passwd);
# nothing runs from it
r=$out/rootfs/kitten
rm -rf "$r"
mkdir -p "$r/etc"
echo '{"name": "kitten", "file": "kitten.jpg"}' >"$r/data.json"
printf 'stand-in for the e2e kitten image\n' >"$r/kitten.jpg"
printf 'NAME="Alpine Linux"\nID=alpine\n' >"$r/etc/os-release"
echo 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"
layer kitten

r=$out/rootfs/pause
rm -rf "$r"
mkdir -p "$r"
gcc -Os -static -DVERSION=3.10.2 -o "$r/pause" "$k8s/build/pause/linux/pause.c"
strip "$r/pause"
layer pause

e2e=registry.k8s.io/e2e-test-images
cat >"$out/images.json" <<JSON
[
 {"names": ["$e2e/busybox:1.37.0-2"], "layer": "busybox.tar",
  "config": {"Env": ["$path"], "Cmd": ["sh"]}},
 {"names": ["$e2e/agnhost:2.66.1", "$e2e/agnhost:2.55"], "layer": "agnhost.tar",
  "config": {"Env": ["$path"], "Entrypoint": ["/agnhost"], "Cmd": ["pause"],
   "ExposedPorts": {"80/tcp": {}, "8080/tcp": {}, "8081/tcp": {}, "9376/tcp": {}, "5000/tcp": {}}}},
 {"names": ["$e2e/nginx:1.27.0-2", "$e2e/nginx:1.28.0-2"], "layer": "nginx.tar",
  "config": {"Env": ["$path"], "Cmd": ["httpd", "-f", "-p", "80", "-h", "/usr/share/nginx/html"],
   "ExposedPorts": {"80/tcp": {}}}},
 {"names": ["$e2e/nonewprivs:1.4"], "layer": "nonewprivs.tar",
  "config": {"Env": ["$path"], "Cmd": ["nnp"]}},
 {"names": ["$e2e/nonroot:1.5"], "layer": "busybox.tar",
  "config": {"Env": ["$path"], "Cmd": ["sh"], "User": "1234"}},
 {"names": ["$e2e/glibc-dns-testing:2.1.1"], "layer": "glibc-dns-testing.tar",
  "config": {"Env": ["$path"], "Cmd": ["sh"]}},
 {"names": ["$e2e/kitten:1.8"], "layer": "kitten.tar",
  "config": {"Env": ["$path"], "Cmd": ["/bin/sh"]}},
 {"names": ["registry.k8s.io/pause:3.10.2", "registry.k8s.io/pause:3.10"], "layer": "pause.tar",
  "config": {"Entrypoint": ["/pause"], "User": "65535:65535"}}
]
JSON
echo "built images in $out"
