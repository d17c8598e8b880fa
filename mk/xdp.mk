# XDP steering function: the BPF program in xdp/, its Go agent in control/.
#
#   make build-xdp   bpf2go (clang -target bpf) + go build -> build/bin/edgeplane
#   make test-xdp    go test ./... under control/ (BPF_PROG_TEST_RUN: root)
#   make bench BENCH=xdp-steer
#
# The BPF objects and their Go bindings are generated here, not committed.

GO       ?= go
XDP_SRCS := $(wildcard xdp/include/*.h xdp/steer/*.h xdp/steer/*.c xdp/noop/*.c) \
            control/internal/steer/gen.go
XDP_GEN  := control/internal/steer/steer_bpfel.o
# The router's XDP fast path (xdp/fwd): net_af_xdp loads build/xdp/fwd.o
# through its xdp_prog devarg (docs/benchmarks.md, "The XDP fast path").
# xdp/fwd_min: the floor its benchmark is measured against (not shipped).
FWD_SRCS := $(wildcard xdp/include/*.h xdp/fwd/*.h xdp/fwd/*.c xdp/fwd/*.def xdp/fwd_min/*.c) \
            control/internal/xdpfwd/gen.go
FWD_GEN  := control/internal/xdpfwd/fwd_bpfel.o

BUILD_TARGETS += build-xdp
TEST_TARGETS  += test-xdp

.PHONY: build-xdp test-xdp

$(XDP_GEN): $(XDP_SRCS)
	@cd control && $(GO) generate ./internal/steer

$(FWD_GEN): $(FWD_SRCS)
	@cd control && $(GO) generate ./internal/xdpfwd

# -p 1: two cores are shared with the C builds.
build-xdp: $(XDP_GEN) $(FWD_GEN)
	@mkdir -p $(BUILD)/bin $(BUILD)/xdp
	@cd control && $(GO) build -p 1 -o $(BUILD)/bin/ ./cmd/...
	@cp control/internal/steer/noop_bpfel.o $(BUILD)/xdp/noop.o
	@cp $(FWD_GEN) $(BUILD)/xdp/fwd.o

test-xdp: build-xdp
	@cd control && $(GO) test -p 1 -count=1 ./...
