# The PFCP user-plane function (control/internal/upf): its Go fuzz target
# on the message handler, bounded in time like the C targets of test-fuzz.
#
#   make test-upf-fuzz [UPF_FUZZ_SECONDS=30]
#   make bench BENCH=pfcp

UPF_FUZZ_SECONDS ?= 30

TEST_TARGETS += test-upf-fuzz

.PHONY: test-upf-fuzz

test-upf-fuzz: build-xdp
	@cd control && GO="$(GO)" ../scripts/go-fuzz ./internal/upf FuzzMessage $(UPF_FUZZ_SECONDS)
