# lism -- same-host TCP shortcut in eBPF.  `make help` lists the targets.
# Quiet by default; `make V=1` shows every command.

BUILD    ?= build
PREFIX   ?= /usr/local
CLANG    ?= clang
CC       ?= gcc
BPFTOOL  ?= bpftool
PKG_CONFIG ?= pkg-config
# The release (VERSION file): the image tag the manifests name.  The build's
# version adds the commit it was built from.
RELEASE  := $(shell cat VERSION)
VERSION  := $(RELEASE)$(shell git describe --always --dirty 2>/dev/null | sed 's/^/+g/')

ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

# Debian 12 packages every target needs; `make deps` installs the missing ones.
DEB_PACKAGES := make gcc clang llvm libclang-rt-14-dev libbpf-dev bpftool libcriterion-dev libmnl-dev \
	libelf-dev zlib1g-dev pkg-config libjson-c-dev libmicrohttpd-dev iproute2 iptables procps util-linux curl \
	podman runc nginx-light redis-server redis-tools postgresql openssh-server openssh-client

ifeq ($(V),1)
Q :=
say :=
else
Q := @
say = @printf '  %-7s %s\n' $(1) $(2);
endif

WARN     := -Wall -Wextra -Werror
CFLAGS   ?= -O2 -g
# Expanded when a recipe runs (=, not :=): on a fresh machine pkg-config and
# the -dev packages only exist once `deps` has run.
USER_CFLAGS = $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -I. -Iinclude -Iuser -I$(BUILD) \
	-DLISM_VERSION='"$(VERSION)"' -DLISM_LIBDIR='"$(PREFIX)/lib/lism"' $(shell $(PKG_CONFIG) --cflags libbpf libelf json-c libmicrohttpd libmnl)
USER_LIBS = $(shell $(PKG_CONFIG) --libs libbpf libelf json-c libmicrohttpd libmnl)
BPF_CFLAGS := -O2 -g -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) $(WARN) \
	-Wno-unused-function -Iinclude -Ibpf -I$(BUILD)

# The core object (the handshake, owner of the maps) and the optional
# features -- the data path (shortcut) among them -- each an object of its
# own so that a kernel refusing one loads lism without it
# (docs/architecture.md, "Core and optional").
CORE_SRCS := bpf/handshake.bpf.c
CORE_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(CORE_SRCS))
OPTIONAL  := shortcut views backstop sweep exec
OPTIONAL_SKELS := $(patsubst %,$(BUILD)/%.skel.h,$(OPTIONAL))
BPF_HDRS  := $(wildcard bpf/*.h) $(wildcard include/lism/*.h)
USER_SRCS := $(wildcard user/*.c)
# everything but main.c, so tests link the same code the tool runs
LIB_SRCS  := $(filter-out user/main.c,$(USER_SRCS))
LIB_OBJS  := $(patsubst user/%.c,$(BUILD)/user/%.o,$(LIB_SRCS))
USER_HDRS := $(wildcard user/*.h) $(wildcard include/lism/*.h) $(BUILD)/lism.skel.h \
	$(OPTIONAL_SKELS)

# lism exec's data path (exec/: the preloaded library's sources), built
# position-independent for liblism.so and linked into the unit tests.
# preload.c and poll.c are liblism.so's own (they interpose libc): never linked elsewhere.
EXEC_SRCS := $(filter-out exec/preload.c exec/poll.c,$(wildcard exec/*.c))
EXEC_OBJS := $(patsubst exec/%.c,$(BUILD)/exec/%.o,$(EXEC_SRCS))
EXEC_HDRS := $(wildcard exec/*.h) $(wildcard include/lism/*.h)

UNIT_SRCS := $(wildcard tests/unit/*.c)
INTEG_SRCS := $(wildcard tests/integration/*.c)
TEST_BPF_SKELS := $(patsubst tests/bpf/%.bpf.c,$(BUILD)/tests/%.skel.h,$(wildcard tests/bpf/*.bpf.c))

.PHONY: all deps vm-deps run test unit integration fuzz soak bench bench-deps image push check-manifests vmtest install clean help
.DEFAULT_GOAL := all
# keep generated objects between the skeleton steps
.SECONDARY:

all: $(BUILD)/lism $(BUILD)/liblism.so

help:
	@echo 'make deps         install the Debian packages lism needs (apt-get)'
	@echo 'make / make all   build build/lism and its BPF object'
	@echo 'make run          deps + build, load lism host-wide, print its status'
	@echo 'make test         deps + build + every test (unit, fuzz smoke, manifests; as root integration, node'
	@echo '                  simulation, and a smoke set on Debian 12'\''s 6.1 and 6.12 under qemu)'
	@echo 'make unit         unprivileged unit tests only'
	@echo 'make integration  integration tests only (root: netns, cgroup2, bpffs)'
	@echo 'make fuzz         libFuzzer on the option and command-line parsers and the ring DMB (FUZZ_SECONDS=$(FUZZ_SECONDS) each)'
	@echo 'make soak         TCP_CRR for SOAK_SECONDS=$(SOAK_SECONDS) (12 threads) + SOAK_GIB=$(SOAK_GIB) GiB each way, root'
	@echo 'make bench        TCP vs plain sockmap vs lism, interleaved (BENCH_QUICK=1: one short pass)'
	@echo 'make image        the node agent image $(IMAGE) (podman, from scratch, nothing pulled)'
	@echo 'make push REGISTRY=HOST/PATH   tag it HOST/PATH/lism:$(RELEASE) and push it'
	@echo 'make vmtest [KERNEL=6.1] [VMTEST_SUITES=...]  lism on Debian 12 kernels under qemu: probe, load,'
	@echo '                  the requirements table, suites (root; docs/kernels.md)'
	@echo 'make check-manifests  validate deploy/kubernetes offline: schema, the API server'\''s rules, policy (npm)'
	@echo 'make install      install lism to $(PREFIX)/sbin and lism(8)'
	@echo 'make clean        remove $(BUILD)/'
	@echo 'V=1               show the commands'

# Install those of the Debian packages $(1) that are missing, so a prepared
# machine needs no network.  nginx, redis, PostgreSQL and sshd are test
# workloads: the system services of those it installs are disabled (an sshd
# that was there before stays: the machine may be reached through it).
define apt_missing
	$(Q)missing=$$(for p in $(1); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "  DEPS    installing:" $$missing; \
		if [ "$$(id -u)" -ne 0 ]; then echo "make: need root to apt-get install $$missing" >&2; exit 1; fi; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null || exit 1; \
		if [ -d /run/systemd/system ]; then \
			for p in $$missing; do case $$p in redis-server) echo redis-server;; nginx-light) echo nginx;; \
				postgresql) echo postgresql;; openssh-server) echo ssh;; esac; done | \
				xargs -r systemctl disable --now -q 2>/dev/null || true; \
		fi; \
	fi
endef

deps:
	$(call apt_missing,$(DEB_PACKAGES))
	$(Q)if ! command -v npm >/dev/null; then \
		echo "  DEPS    installing: nodejs npm (make check-manifests)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null || exit 1; \
	fi

$(BUILD)/vmlinux.h: | $(BUILD)
	$(call say,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD) $(BUILD)/bpf $(BUILD)/user $(BUILD)/exec $(BUILD)/tests:
	$(Q)mkdir -p $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) $(BUILD)/vmlinux.h | $(BUILD)/bpf
	$(call say,CLANG,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# The core object and its skeleton: its maps are the ones every object pins and reuses.
$(BUILD)/lism.bpf.o: $(CORE_OBJS)
	$(call say,LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

$(BUILD)/lism.skel.h: $(BUILD)/lism.bpf.o
	$(call say,GEN,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name lism_bpf > $@.tmp && mv $@.tmp $@

# An optional feature's object (linked alone: the linker keeps BTF, drops
# DWARF) and skeleton (lism_views_bpf, ...): its maps are the core's pins.
$(BUILD)/%.bpf.o: $(BUILD)/bpf/%.bpf.o
	$(call say,LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $<

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call say,GEN,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name lism_$*_bpf > $@.tmp && mv $@.tmp $@

$(BUILD)/user/%.o: user/%.c $(USER_HDRS) | $(BUILD)/user
	$(call say,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -c $< -o $@

$(BUILD)/exec/%.o: exec/%.c $(EXEC_HDRS) | $(BUILD)/exec
	$(call say,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -fPIC -c $< -o $@

# lism exec's preloaded library: only its interposed calls are exported.
$(BUILD)/liblism.so: $(BUILD)/exec/preload.o $(BUILD)/exec/poll.o $(EXEC_OBJS) exec/liblism.map
	$(call say,LD,$@)
	$(Q)$(CC) -shared -Wl,--version-script=exec/liblism.map -Wl,--no-undefined -Wl,-z,now \
		$(BUILD)/exec/preload.o $(BUILD)/exec/poll.o $(EXEC_OBJS) -ldl -lpthread -o $@

$(BUILD)/lism: $(BUILD)/user/main.o $(LIB_OBJS) $(EXEC_OBJS)
	$(call say,LD,$@)
	$(Q)$(CC) $(USER_CFLAGS) $^ $(USER_LIBS) -o $@

$(BUILD)/tests/unit: $(UNIT_SRCS) $(LIB_OBJS) $(EXEC_OBJS) $(USER_HDRS) $(EXEC_HDRS) | $(BUILD)/tests
	$(call say,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) $(UNIT_SRCS) $(LIB_OBJS) $(EXEC_OBJS) $(USER_LIBS) -lcriterion -lpthread -o $@

# The same unit tests, and the code they test, under AddressSanitizer and UBSan.
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
$(BUILD)/tests/unit-asan: $(UNIT_SRCS) $(LIB_SRCS) $(EXEC_SRCS) $(USER_HDRS) $(EXEC_HDRS) | $(BUILD)/tests
	$(call say,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -O1 $(SAN_FLAGS) $(UNIT_SRCS) $(LIB_SRCS) $(EXEC_SRCS) $(USER_LIBS) -lcriterion -lpthread -o $@

# BPF programs that exist only to test BPF code (BPF_PROG_TEST_RUN).
$(BUILD)/tests/%.bpf.o: tests/bpf/%.bpf.c $(BPF_HDRS) $(BUILD)/vmlinux.h | $(BUILD)/tests
	$(call say,CLANG,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/tests/%.skel.h: $(BUILD)/tests/%.bpf.o
	$(call say,GEN,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*) > $@.tmp && mv $@.tmp $@

# Programs the integration tests run under lism exec (they know nothing of lism).
$(BUILD)/tests/exec-peer: tests/programs/exec_peer.c | $(BUILD)/tests
	$(call say,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE $< -o $@

# The scenarios of docs/semantics.md: run in the integration test's own
# process (plain TCP, the sk_msg path) and by semantics-peer under lism exec (a ring).
SEM_SRCS := tests/programs/semantics.c
SEM_HDRS := tests/programs/semantics.h tests/integration/slow.h
$(BUILD)/tests/semantics-peer: tests/programs/semantics_peer.c $(SEM_SRCS) $(SEM_HDRS) | $(BUILD)/tests
	$(call say,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -Itests/programs -Itests/integration \
		tests/programs/semantics_peer.c $(SEM_SRCS) -o $@

# Many short waits between two processes, checked and counted (issue 28: waits on ring sockets).
$(BUILD)/tests/wait-stress: tests/programs/wait_stress.c tests/programs/wait_plan.h tests/integration/slow.h \
		| $(BUILD)/tests
	$(call say,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -Itests/programs -Itests/integration $< -lpthread -o $@

$(BUILD)/tests/integration: $(INTEG_SRCS) $(wildcard tests/integration/*.h) $(SEM_SRCS) $(SEM_HDRS) $(LIB_OBJS) \
		$(EXEC_OBJS) $(USER_HDRS) $(TEST_BPF_SKELS) $(BUILD)/tests/exec-peer $(BUILD)/tests/semantics-peer \
		$(BUILD)/tests/wait-stress tests/programs/wait_plan.h $(BUILD)/liblism.so | $(BUILD)/tests
	$(call say,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -Itests/integration -Itests/programs -I$(BUILD)/tests $(INTEG_SRCS) $(SEM_SRCS) \
		$(LIB_OBJS) $(EXEC_OBJS) $(USER_LIBS) -lcriterion -lpthread -o $@

# libFuzzer targets: the TCP option parser (wire input), the command line,
# and the ring DMB reader and writer (a header the peer process writes).
FUZZ_TARGETS := option cli ring
FUZZ_SECONDS ?= 300
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined $(WARN) -D_GNU_SOURCE -I. -Iinclude -Iuser
$(BUILD)/fuzz:
	$(Q)mkdir -p $@

$(BUILD)/fuzz/fuzz_option: tests/fuzz/fuzz_option.c $(wildcard include/lism/*.h) | $(BUILD)/fuzz
	$(call say,CLANG,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $< -o $@

$(BUILD)/fuzz/fuzz_cli: tests/fuzz/fuzz_cli.c user/cli.c user/cli.h user/event_types.c user/event_types.h \
		$(wildcard include/lism/*.h) | $(BUILD)/fuzz
	$(call say,CLANG,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) tests/fuzz/fuzz_cli.c user/cli.c user/event_types.c -o $@

$(BUILD)/fuzz/fuzz_ring: tests/fuzz/fuzz_ring.c exec/ring.c $(EXEC_HDRS) | $(BUILD)/fuzz
	$(call say,CLANG,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) tests/fuzz/fuzz_ring.c exec/ring.c -o $@

fuzz: $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_TARGETS))
	$(Q)for t in $(FUZZ_TARGETS); do \
		mkdir -p $(BUILD)/fuzz/corpus-$$t; \
		echo "== fuzz $$t ($(FUZZ_SECONDS) s)"; \
		$(BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			$(BUILD)/fuzz/corpus-$$t tests/fuzz/corpus/$$t 2>&1 | \
			grep -E 'Done [0-9]+ runs|ERROR|SUMMARY' || exit 1; \
	done

# The long soak; `make test` runs the same test for 120 s and 2 GiB.
SOAK_SECONDS ?= 600
SOAK_GIB ?= 5
soak: deps all $(BUILD)/tests/integration
	$(Q)LISM_SOAK_SECONDS=$(SOAK_SECONDS) LISM_SOAK_GIB=$(SOAK_GIB) LISM_BIN=$(abspath $(BUILD)/lism) \
		$(BUILD)/tests/integration --jobs 1 --filter 'soak/*'

# `make bench`: the workloads and the programs it drives (never part of `make test`).
BENCH_PACKAGES := sockperf wrk iperf3 gnuplot-nox python3 # + redis, nginx from DEB_PACKAGES
$(BUILD)/bench:
	$(Q)mkdir -p $@

$(BUILD)/bench/%: bench/%.c bench/bench_util.h | $(BUILD)/bench
	$(call say,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -pthread $< -o $@

# a bench program named by its absolute path (`make $PWD/build/bench/idlering`) is the same file
ifneq ($(abspath $(BUILD)),$(BUILD))
$(abspath $(BUILD))/bench/%: $(BUILD)/bench/% ;
endif

# connsetup -x follows lism exec's contract with liblism's own code
$(BUILD)/bench/connsetup: bench/connsetup.c bench/bench_util.h $(EXEC_OBJS) | $(BUILD)/bench
	$(call say,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -pthread -I. -Iinclude $< $(EXEC_OBJS) -o $@

# the plain-sockmap baseline bench.py compares with (loaded with bpftool)
$(BUILD)/bench/sockmap.bpf.o: bench/sockmap.bpf.c $(BUILD)/vmlinux.h | $(BUILD)/bench
	$(call say,CLANG,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

bench-deps: deps
	$(call apt_missing,$(BENCH_PACKAGES))

# lism on Debian 12's 6.1 and 6.12 cloud kernels under qemu (tests/vm/vmtest.sh):
#   make vmtest [KERNEL=6.1] [VMTEST_SUITES='fallback/* scope/*']
VM_PACKAGES := qemu-system-x86 python3
vm-deps:
	$(call apt_missing,$(VM_PACKAGES))

vmtest: deps vm-deps all $(BUILD)/tests/integration
	$(Q)VMTEST_SUITES='$(VMTEST_SUITES)' tests/vm/vmtest.sh $(BUILD) $(KERNEL)

bench: bench-deps all $(BUILD)/bench/msgrate $(BUILD)/bench/connsetup $(BUILD)/bench/idlering $(BUILD)/bench/yieldpp \
		$(BUILD)/bench/sockmap.bpf.o
	$(Q)BUILD=$(abspath $(BUILD)) python3 bench/bench.py

# podman's cgroupfs manager (named: systemd's would want a .slice parent)
# makes a cgroup per hierarchy for --cgroup-parent (or libpod_parent without
# one) and leaves it: remove what it made for $(1).
podman_cgroups_rm = for d in /sys/fs/cgroup/$(1) /sys/fs/cgroup/*/$(1); do \
		[ -d "$$d" ] && find "$$d" -depth -type d -exec rmdir {} + 2>/dev/null; done; true

# The node agent image (deploy/Containerfile): the binary and the libraries
# ldd names for it, FROM scratch; built locally, nothing pulled.
IMAGE ?= localhost/lism:$(RELEASE)
# runc: crun fails on this machines' cgroup layout.  Explicit ulimits: root
# here lacks CAP_SYS_RESOURCE, so podman's defaults above the hard limits fail.
PODMAN := podman --runtime runc
PODMAN_LIMITS := --ulimit nofile=20000:20000 --ulimit nproc=32768:32768
image: deps all
	$(call say,IMAGE,$(IMAGE))
	$(Q)rm -rf $(BUILD)/image-root && mkdir -p $(BUILD)/image-root/usr/sbin \
		$(BUILD)/image-root/proc $(BUILD)/image-root/sys $(BUILD)/image-root/dev \
		$(BUILD)/image-root/tmp $(BUILD)/image-root/etc
	$(Q)install -m 0755 $(BUILD)/lism $(BUILD)/image-root/usr/sbin/lism
	$(Q)install -D -m 0644 $(BUILD)/liblism.so $(BUILD)/image-root/usr/lib/lism/liblism.so
	$(Q)for lib in $$(ldd $(BUILD)/lism | awk '$$2 == "=>" && $$3 ~ /^\// { print $$3 } $$1 ~ /^\// { print $$1 }'); do \
		cp -L --parents $$lib $(BUILD)/image-root/ || exit 1; \
	done
	$(Q)$(PODMAN) build -q -f $(abspath deploy/Containerfile) -t $(IMAGE) $(BUILD)/image-root >/dev/null
	$(Q)cg=lism-image-$$$$; $(PODMAN) --cgroup-manager=cgroupfs run --rm --network none $(PODMAN_LIMITS) \
		--cgroup-parent=/$$cg \
		$(IMAGE) version; rc=$$?; $(call podman_cgroups_rm,$$cg); exit $$rc

# The image under the registry's name, pushed (podman login first):
#   make push REGISTRY=registry.example.com/platform
# then point the manifests at it: docs/kubernetes.md, "Install".
push: image
	$(Q)[ -n "$(REGISTRY)" ] || { echo "make push: set REGISTRY, e.g. REGISTRY=registry.example.com/platform" >&2; exit 2; }
	$(call say,PUSH,$(REGISTRY)/lism:$(RELEASE))
	$(Q)$(PODMAN) tag $(IMAGE) $(REGISTRY)/lism:$(RELEASE) && $(PODMAN) push -q $(REGISTRY)/lism:$(RELEASE)

check-manifests: deps
	$(Q)tests/manifests/run.sh $(BUILD)

# lism host-wide, and lism exec's device for it (`lism device`, in the
# background until lism is unloaded; its log in /run/lism/device.log).
run: deps all
	$(Q)if $(BUILD)/lism status >/dev/null 2>&1; then \
		echo "lism is already loaded; its status:"; \
	else \
		$(BUILD)/lism load --mount-bpffs || exit $$?; \
	fi; \
	mkdir -p /run/lism && setsid $(BUILD)/lism device </dev/null >>/run/lism/device.log 2>&1 & \
	sleep 0.5; $(BUILD)/lism status

unit: $(BUILD)/tests/unit
	$(Q)$(BUILD)/tests/unit --jobs 2

integration: $(BUILD)/lism $(BUILD)/tests/integration
	$(Q)LISM_BIN=$(abspath $(BUILD)/lism) $(BUILD)/tests/integration --jobs 1

# Each suite prints Criterion's synthesis; the last line adds them up.
test: deps vm-deps all image $(BUILD)/tests/unit $(BUILD)/tests/unit-asan $(BUILD)/tests/integration \
		$(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_TARGETS))
	$(Q)tests/run-all.sh $(BUILD)

install: all
	$(call say,INSTALL,$(DESTDIR)$(PREFIX)/sbin/lism)
	$(Q)install -D -m 0755 $(BUILD)/lism $(DESTDIR)$(PREFIX)/sbin/lism
	$(Q)install -D -m 0644 $(BUILD)/liblism.so $(DESTDIR)$(PREFIX)/lib/lism/liblism.so
	$(Q)install -D -m 0644 docs/lism.8 $(DESTDIR)$(PREFIX)/share/man/man8/lism.8

clean:
	$(call say,CLEAN,$(BUILD))
	$(Q)rm -rf $(BUILD)
