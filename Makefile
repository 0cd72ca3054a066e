# rkt build. Works without ./configure (built-in defaults below); configure
# writes config.mk, included when present, to override them.
-include config.mk

PREFIX          ?= /usr/local
BINDIR          ?= $(PREFIX)/bin
LIBDIR          ?= $(PREFIX)/lib
DATADIR_RKT     ?= /var/lib/rkt
STAGE1_DIR      ?= $(LIBDIR)/rkt
STAGE1_PATH     ?= $(STAGE1_DIR)/stage1
SYSTEM_CONFIG   ?= $(LIBDIR)/rkt
LOCAL_CONFIG    ?= /etc/rkt
SOCKET_PATH     ?= /run/rkt/kubelet-service.sock
SOCKET_GROUP    ?= rkt
CNI_CONF_DIR    ?= /etc/rkt/net.d
CNI_PLUGIN_DIRS ?= /usr/lib/cni:/opt/cni/bin
SYSTEMD_UNITDIR ?= $(LIBDIR)/systemd/system
# PREFIX/lib, not LIBDIR: systemd reads these (and units) from /usr/lib and
# /usr/local/lib only, never from a multiarch or lib64 LIBDIR
TMPFILES_DIR    ?= $(PREFIX)/lib/tmpfiles.d
SYSUSERS_DIR    ?= $(PREFIX)/lib/sysusers.d
BASHCOMP_DIR    ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMP_DIR     ?= $(PREFIX)/share/zsh/vendor-completions
MANDIR          ?= $(PREFIX)/share/man
SECCOMP         ?= yes
DESTDIR         ?=

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.0.0-dev)
BUILDDIR ?= build
BIN      := $(BUILDDIR)/bin

# grpcnotrace: grpc without golang.org/x/net/trace, whose html/template
# makes the linker keep every exported method of every reachable type
# (a quarter of the rkt binary; see Documentation/performance.md).
GOTAGS := grpcnotrace
ifeq ($(SECCOMP),yes)
GOTAGS += seccomp
endif

PKG := github.com/rkt/rkt/pkg/buildinfo
LDFLAGS := -X $(PKG).Version=$(VERSION) \
	-X $(PKG).DataDir=$(DATADIR_RKT) \
	-X $(PKG).Stage1Path=$(STAGE1_PATH) \
	-X $(PKG).SystemConfigDir=$(SYSTEM_CONFIG) \
	-X $(PKG).LocalConfigDir=$(LOCAL_CONFIG) \
	-X $(PKG).SocketPath=$(SOCKET_PATH) \
	-X $(PKG).SocketGroup=$(SOCKET_GROUP) \
	-X $(PKG).CNIConfDir=$(CNI_CONF_DIR) \
	-X $(PKG).CNIPluginDirs=$(CNI_PLUGIN_DIRS)

GOBUILD := CGO_ENABLED=1 $(GO) build -trimpath -tags '$(GOTAGS)' -ldflags '$(LDFLAGS)'
# rkt needs no C: static, it maps no libc and no libseccomp (stage1, which
# runs libcontainer's nsenter and seccomp, keeps cgo).
RKT_GOBUILD := CGO_ENABLED=0 $(GO) build -trimpath -tags '$(GOTAGS)' -ldflags '$(LDFLAGS)'

# The paths the generated files name (units, tmpfiles.d, sysusers.d, the
# defaults in the man pages), rewritten only when one changed: ./configure
# run again, or PREFIX=... on the command line. Files made for other paths
# are then made again.
PATHS_VALUES = $(LDFLAGS) BINDIR=$(BINDIR)
PATHS_STAMP = $(BUILDDIR)/paths.stamp

# Test tooling (crictl, critest, checkpointctl) is built from the Go module proxy.
CRI_TOOLS_VERSION ?= v1.37.0
CHECKPOINTCTL_VERSION ?= v1.6.0
STATICCHECK_VERSION ?= v0.8.2
TOOLSDIR ?= $(BUILDDIR)/tools

.PHONY: deps run all dist rkt stage1 check unit functional race critest bench fuzz chaos install uninstall clean fmt vet lint tools deb

all: rkt stage1 man

# Debian packages and Go modules the build and the tests need (root).
deps:
	./.ci/install-deps

# Start rkt kubelet-service in the foreground on $(SOCKET_PATH) (root).
RUN_GROUP ?= $(SOCKET_GROUP)
run: all
	getent group $(RUN_GROUP) >/dev/null || groupadd --system $(RUN_GROUP)
	$(BIN)/rkt kubelet-service --stage1-path=$(abspath $(BIN)/stage1) --socket-group=$(RUN_GROUP)

rkt:
	$(RKT_GOBUILD) -o $(BIN)/rkt ./rkt

stage1:
	$(GOBUILD) -o $(BIN)/stage1 ./stage1

# Man pages (rkt.1, rkt-run.1, ...) from the cobra commands, written by a
# generator built only with the genman tag (rkt/gen_man.go): not in $(BIN)/rkt.
.PHONY: man
man: $(BUILDDIR)/man/rkt.1

$(BUILDDIR)/man/rkt.1: $(wildcard rkt/*.go) go.mod Makefile $(PATHS_STAMP)
	rm -rf $(BUILDDIR)/man
	CGO_ENABLED=1 $(GO) run -trimpath -tags '$(GOTAGS) genman' -ldflags '$(LDFLAGS)' ./rkt gen-man $(BUILDDIR)/man

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	CGO_ENABLED=1 $(GO) vet -tags '$(GOTAGS)' ./...

# staticcheck's default checks; an intended use of a deprecated API (the
# fields older kubelets send) is marked with a //lint:ignore and its reason.
lint: $(TOOLSDIR)/staticcheck
	CGO_ENABLED=1 $(TOOLSDIR)/staticcheck -tags '$(GOTAGS)' ./...

$(TOOLSDIR)/staticcheck:
	GOBIN=$(abspath $(TOOLSDIR)) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

UNIT_PKGS = $$($(GO) list ./... | grep -v /tests)

# With the data race detector (as containerd's and Kubernetes' unit runs).
unit:
	CGO_ENABLED=1 $(GO) test -race -tags '$(GOTAGS)' -count=1 -timeout 20m $(UNIT_PKGS)

tools: $(TOOLSDIR)/crictl $(TOOLSDIR)/critest $(TOOLSDIR)/kubelet $(TOOLSDIR)/criu $(TOOLSDIR)/checkpointctl

$(TOOLSDIR)/crictl:
	GOBIN=$(abspath $(TOOLSDIR)) $(GO) install sigs.k8s.io/cri-tools/cmd/crictl@$(CRI_TOOLS_VERSION)

# checkpointctl reads the container checkpoint archives (CheckpointContainer)
# in TestCRICheckpointContainer. v1.7.0 needs a go-criu the module proxy
# does not serve.
$(TOOLSDIR)/checkpointctl:
	GOBIN=$(abspath $(TOOLSDIR)) $(GO) install github.com/checkpoint-restore/checkpointctl@$(CHECKPOINTCTL_VERSION)

$(TOOLSDIR)/critest:
	./tests/build-critest.sh $(CRI_TOOLS_VERSION) $(abspath $(TOOLSDIR))

# criu for the checkpoint tests: Debian 12's 3.17.1 does not start on
# recent kernels (tests/build-criu.sh).
$(TOOLSDIR)/criu: tests/build-criu.sh
	./tests/build-criu.sh $(abspath $(TOOLSDIR))

# The kubelet of the smoke test and of e2e-node (Kubernetes version pinned by
# tests/e2e-node/wrapper/go.mod).
$(TOOLSDIR)/kubelet: tests/e2e-node/wrapper/go.mod tests/e2e-node/wrapper/go.sum
	./tests/e2e-node/build-k8s.sh $(TOOLSDIR) kubelet

# Kubernetes node conformance ([NodeConformance] minus Flaky, Slow, Serial)
# against rkt, or RUNTIME=containerd (Debian's); see
# Documentation/node-conformance.md. Root; one run at a time.
E2E_DIR := $(BUILDDIR)/e2e-node
RUNTIME ?= rkt
E2E_FOCUS ?= \[NodeConformance\]
E2E_SKIP ?= \[Flaky\]|\[Slow\]|\[Serial\]
E2E_PROCS ?= 4
.PHONY: e2e-node e2e-node-build
e2e-node-build: all $(TOOLSDIR)/kubelet $(TOOLSDIR)/crictl
	./tests/e2e-node/build-k8s.sh $(E2E_DIR)/bin e2e_node.test agnhost ginkgo nnp
	ln -f $(TOOLSDIR)/kubelet $(E2E_DIR)/bin/kubelet
	CGO_ENABLED=0 $(GO) build -trimpath -o $(E2E_DIR)/bin/registry ./tests/e2e-node/registry
	CGO_ENABLED=0 $(GO) build -trimpath -o $(E2E_DIR)/bin/e2e-summary ./tests/e2e-node/summary
	./tests/e2e-node/build-images.sh $(E2E_DIR)/images $(E2E_DIR)/bin

e2e-node: e2e-node-build
	[ "$(RUNTIME)" != containerd ] || ./.ci/install-bench-deps
	RUNTIME=$(RUNTIME) E2E_FOCUS='$(E2E_FOCUS)' E2E_SKIP='$(E2E_SKIP)' E2E_PROCS=$(E2E_PROCS) \
		CRICTL=$(abspath $(TOOLSDIR))/crictl E2E_OUT=$(abspath $(E2E_DIR)) RKT_BIN=$(abspath $(BIN)/rkt) RKT_STAGE1=$(abspath $(BIN)/stage1) \
		./tests/e2e-node/run.sh

# The earlier versions TestUpgradeWithRunningPods upgrades a node from while
# its pods run: commits of this repository (the oldest, 2026-12-01, and one
# with the lean idle supervisor, 2026-12-02), each built from its own tree
# with its own Makefile.
UPGRADE_FROM ?= 68d6791 418ec36
UPGRADE_BINS := $(foreach c,$(UPGRADE_FROM),$(BUILDDIR)/upgrade-from-$(c)/bin)
.PHONY: upgrade-from
upgrade-from: $(addsuffix /stage1,$(UPGRADE_BINS))

$(BUILDDIR)/upgrade-from-%/bin/stage1:
	@./tests/build-upgrade-from.sh $* $(abspath $(BUILDDIR))/upgrade-from-$*

# Functional tests drive the built binaries; they need root.
functional: all tools upgrade-from
	RKT_BIN=$(abspath $(BIN)/rkt) RKT_STAGE1=$(abspath $(BIN)/stage1) RKT_TOOLS=$(abspath $(TOOLSDIR)) \
		RKT_UPGRADE_FROM=$$(for d in $(abspath $(UPGRADE_BINS)); do [ -x $$d/stage1 ] && printf %s: $$d; done) \
		CGO_ENABLED=1 $(GO) test -tags '$(GOTAGS)' -count=1 -p 1 -timeout 45m ./tests/...

check: fmt vet lint unit functional

# The functional tests against an rkt built with the data race detector
# (its stage1 is $(BIN)'s: it runs libcontainer's init): the service and
# the CLI as the tests drive them. A race is written to
# $(RACE_DIR)/report.<pid> and fails the target. TestRktBinaryLean is
# skipped: a race build links libc.
RACE_DIR := $(BUILDDIR)/race
race: all tools upgrade-from
	rm -rf $(RACE_DIR) && mkdir -p $(RACE_DIR)
	$(GOBUILD) -race -o $(RACE_DIR)/rkt ./rkt
	ln -s $(abspath $(BIN)/stage1) $(RACE_DIR)/stage1
	GORACE=log_path=$(abspath $(RACE_DIR))/report \
		RKT_BIN=$(abspath $(RACE_DIR)/rkt) RKT_STAGE1=$(abspath $(BIN)/stage1) RKT_TOOLS=$(abspath $(TOOLSDIR)) \
		RKT_UPGRADE_FROM=$$(for d in $(abspath $(UPGRADE_BINS)); do [ -x $$d/stage1 ] && printf %s: $$d; done) \
		CGO_ENABLED=1 $(GO) test -tags '$(GOTAGS)' -count=1 -p 1 -timeout 90m -skip '^TestRktBinaryLean$$' ./tests/... || failed=1; \
	if ls $(RACE_DIR)/report.* >/dev/null 2>&1; then cat $(RACE_DIR)/report.*; echo "data races: $(RACE_DIR)/report.*"; exit 1; fi; \
	[ -z "$$failed" ]

# Benchmarks; BenchmarkCRIVsContainerd measures Debian's containerd (runc)
# and containerd 2.4.2 (crun) beside rkt (installed by
# .ci/install-bench-deps, as root; containerd 2.4.2 into $(TOOLSDIR)).
bench: all tools
	GO=$(GO) ./.ci/install-bench-deps $(TOOLSDIR)
	CGO_ENABLED=1 $(GO) test -tags '$(GOTAGS)' -run '^$$' -bench . -benchtime 1x -count=1 $(UNIT_PKGS)
	RKT_BIN=$(abspath $(BIN)/rkt) RKT_STAGE1=$(abspath $(BIN)/stage1) RKT_TOOLS=$(abspath $(TOOLSDIR)) \
		CGO_ENABLED=1 $(GO) test -tags '$(GOTAGS)' -run '^$$' -bench . -count=1 -timeout 60m ./tests/...

# Long robustness runs, kept out of make check (which runs short ones):
# CHAOS_ROUNDS rounds of SIGKILLs of the service and of stage1, and
# CHURN_PODS pods created and removed by 10 clients.
CHAOS_ROUNDS ?= 200
CHURN_PODS ?= 1000
chaos: all tools
	RKT_BIN=$(abspath $(BIN)/rkt) RKT_STAGE1=$(abspath $(BIN)/stage1) RKT_TOOLS=$(abspath $(TOOLSDIR)) \
		RKT_CHAOS_ROUNDS=$(CHAOS_ROUNDS) RKT_CHURN_PODS=$(CHURN_PODS) CGO_ENABLED=1 $(GO) test -tags '$(GOTAGS)' \
		-count=1 -p 1 -timeout 120m -run '^(TestChaos|TestCRIChurn)$$' -v ./tests/

# Native Go fuzzing, FUZZTIME per target (go test -fuzz takes one target
# at a time). Seed corpora also run as plain tests in `make unit`.
# Minimization is bounded by a count: bounded by a time, it ran until the
# coordinator's identical deadline, which killed and restarted the worker
# (every 5 s on the slower targets, a seventh of the executions).
FUZZTIME ?= 30s
FUZZ_TARGETS = ./pkg/tarx:FuzzExtract ./pkg/tarx/upper:FuzzArchive ./store:FuzzParseReference \
	./store/regconfig:FuzzLoad ./store/regconfig:FuzzNormalizeRegistry \
	./kubeletsvc:FuzzTranslateContainer ./kubeletsvc:FuzzTranslateSandbox ./kubeletsvc:FuzzCRIRequest \
	./kubeletsvc:FuzzCRISequence \
	./stage1/control:FuzzReadFrame ./stage1/control:FuzzReadMessage \
	./store:FuzzACI ./store:FuzzLayoutArchive ./store:FuzzRegistryImage ./pkg/rkt1conf:FuzzConfig \
	./stage0:FuzzReadCheckpoint ./stage0:FuzzImageSpec ./stage1:FuzzPstreeMaxPID ./stage1:FuzzLogSplitter \
	./networking:FuzzNetworkConfig ./pkg/appuser:FuzzLookup

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} in $${t%%:*} for $(FUZZTIME)"; \
		CGO_ENABLED=1 $(GO) test -tags '$(GOTAGS)' -count=1 -run '^$$' -fuzz "^$${t#*:}$$" \
			-fuzztime $(FUZZTIME) -fuzzminimizetime 200x "$${t%%:*}"; \
	done

DIST_IN := $(wildcard dist/systemd/*.in dist/tmpfiles.d/*.in dist/sysusers.d/*.in)
DIST_OUT := $(patsubst dist/%.in,$(BUILDDIR)/dist/%,$(DIST_IN))

$(PATHS_STAMP): FORCE
	@mkdir -p $(dir $@)
	@printf '%s\n' '$(PATHS_VALUES)' | cmp -s - $@ || printf '%s\n' '$(PATHS_VALUES)' > $@
.PHONY: FORCE
FORCE:

$(BUILDDIR)/dist/%: dist/%.in $(PATHS_STAMP) Makefile
	@mkdir -p $(dir $@)
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SOCKET_PATH@|$(SOCKET_PATH)|g' \
		-e 's|@SOCKET_GROUP@|$(SOCKET_GROUP)|g' -e 's|@DATADIR_RKT@|$(DATADIR_RKT)|g' \
		-e 's|@LOCAL_CONFIG@|$(LOCAL_CONFIG)|g' -e 's|@CNI_CONF_DIR@|$(CNI_CONF_DIR)|g' $< > $@

dist: $(DIST_OUT)

install: all dist
	install -D -m 0755 $(BIN)/rkt $(DESTDIR)$(BINDIR)/rkt
	install -D -m 0755 $(BIN)/stage1 $(DESTDIR)$(STAGE1_PATH)
	install -D -m 0755 dist/rkt1-upgrade $(DESTDIR)$(STAGE1_DIR)/rkt1-upgrade
	install -D -m 0644 $(BUILDDIR)/dist/systemd/rkt-kubelet-service.service $(DESTDIR)$(SYSTEMD_UNITDIR)/rkt-kubelet-service.service
	install -D -m 0644 $(BUILDDIR)/dist/systemd/rkt-kubelet-service.socket $(DESTDIR)$(SYSTEMD_UNITDIR)/rkt-kubelet-service.socket
	install -D -m 0644 $(BUILDDIR)/dist/systemd/rkt-gc.service $(DESTDIR)$(SYSTEMD_UNITDIR)/rkt-gc.service
	install -D -m 0644 dist/systemd/rkt-gc.timer $(DESTDIR)$(SYSTEMD_UNITDIR)/rkt-gc.timer
	install -D -m 0644 $(BUILDDIR)/dist/tmpfiles.d/rkt.conf $(DESTDIR)$(TMPFILES_DIR)/rkt.conf
	install -D -m 0644 $(BUILDDIR)/dist/sysusers.d/rkt.conf $(DESTDIR)$(SYSUSERS_DIR)/rkt.conf
	install -d $(DESTDIR)$(MANDIR)/man1
	@mkdir -p $(BUILDDIR)/completion
	$(BIN)/rkt completion bash > $(BUILDDIR)/completion/rkt
	$(BIN)/rkt completion zsh > $(BUILDDIR)/completion/_rkt
	install -D -m 0644 $(BUILDDIR)/completion/rkt $(DESTDIR)$(BASHCOMP_DIR)/rkt
	install -D -m 0644 $(BUILDDIR)/completion/_rkt $(DESTDIR)$(ZSHCOMP_DIR)/_rkt
	install -m 0644 $(BUILDDIR)/man/*.1 $(DESTDIR)$(MANDIR)/man1/

# The man pages removed are those this tree makes (not every rkt-*.1).
uninstall: man
	rm -f $(DESTDIR)$(BINDIR)/rkt $(DESTDIR)$(STAGE1_PATH) $(DESTDIR)$(STAGE1_DIR)/rkt1-upgrade \
		$(DESTDIR)$(SYSTEMD_UNITDIR)/rkt-kubelet-service.service \
		$(DESTDIR)$(SYSTEMD_UNITDIR)/rkt-kubelet-service.socket \
		$(DESTDIR)$(SYSTEMD_UNITDIR)/rkt-gc.service $(DESTDIR)$(SYSTEMD_UNITDIR)/rkt-gc.timer \
		$(DESTDIR)$(TMPFILES_DIR)/rkt.conf $(DESTDIR)$(SYSUSERS_DIR)/rkt.conf $(DESTDIR)$(BASHCOMP_DIR)/rkt \
		$(DESTDIR)$(ZSHCOMP_DIR)/_rkt $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(wildcard $(BUILDDIR)/man/*.1)))

# A Debian package of rkt: `make install` with Debian's paths (also in a
# tree configured with another --libdir: the maintainer scripts run
# /usr/lib/rkt/rkt1-upgrade and read /usr/lib/{sysusers,tmpfiles}.d) into
# $(DEB_DIR)/root (built in its own build dir: build/bin keeps its paths),
# man pages compressed, docs, control file and the maintainer scripts in
# dist/deb (those present of preinst, postinst, prerm, postrm).
DEB_DIR     ?= $(BUILDDIR)/deb
DEB_ARCH    ?= $(shell dpkg --print-architecture 2>/dev/null)
DEB_VERSION ?= $(shell ./dist/deb/version.sh)
DEB_UNITDIR ?= $(shell pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
DEB_COMPRESS ?= xz
DEB_FILE    := $(BUILDDIR)/rkt_$(DEB_VERSION)_$(DEB_ARCH).deb

deb:
	@test -n "$(DEB_ARCH)" || { echo "make deb: dpkg --print-architecture failed (not a Debian system?)"; exit 1; }
	rm -rf $(DEB_DIR)/root
	umask 022 && $(MAKE) install BUILDDIR=$(abspath $(DEB_DIR)/build) DESTDIR=$(abspath $(DEB_DIR)/root) \
		PREFIX=/usr LIBDIR=/usr/lib LOCAL_CONFIG=/etc/rkt SYSTEMD_UNITDIR=$(DEB_UNITDIR)
	gzip -9n $(DEB_DIR)/root/usr/share/man/man1/*.1
	install -d -m 0755 $(DEB_DIR)/root/usr/share/doc/rkt/Documentation $(DEB_DIR)/root/DEBIAN
	install -m 0644 README.md dist/deb/copyright $(DEB_DIR)/root/usr/share/doc/rkt/
	install -m 0644 Documentation/*.md $(DEB_DIR)/root/usr/share/doc/rkt/Documentation/
	for s in preinst postinst prerm postrm; do \
		if [ -f dist/deb/$$s ]; then install -m 0755 dist/deb/$$s $(DEB_DIR)/root/DEBIAN/; fi; \
	done
	sed -e 's|@DEB_VERSION@|$(DEB_VERSION)|' -e 's|@DEB_ARCH@|$(DEB_ARCH)|' \
		-e "s|@INSTALLED_SIZE@|$$(du -sk --exclude=DEBIAN $(DEB_DIR)/root | cut -f1)|" \
		-e 's|@SECCOMP_DEPENDS@|$(if $(filter yes,$(SECCOMP)),libseccomp2 (>= 2.5.0)$(comma) ,)|' \
		dist/deb/control.in > $(DEB_DIR)/root/DEBIAN/control
	dpkg-deb --root-owner-group -Z$(DEB_COMPRESS) --build $(DEB_DIR)/root $(DEB_FILE)

comma := ,

clean:
	rm -rf $(BUILDDIR)
