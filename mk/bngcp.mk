# The BNG control plane (control/internal/bngcp, `edgeplane bng-cp`) and the
# lab's subscriber emulator (lab/subemu, its own Go module: it shares no
# code with the server it tests).
#
#   make build-subemu                      -> build/bin/subemu
#   make test-bngcp-fuzz [BNGCP_FUZZ_SECONDS=10]   the Go decoders' fuzz targets
#   make bench BENCH=bng-cp

BNGCP_FUZZ_SECONDS ?= 10
BNGCP_FUZZ := ./internal/bngcp/pppoe:FuzzDiscovery ./internal/bngcp/ppp:FuzzPacket \
              ./internal/bngcp/frame:FuzzParse ./internal/bngcp/nd:FuzzND ./internal/bngcp:FuzzFrame

BUILD_TARGETS += build-subemu
TEST_TARGETS  += test-bngcp-fuzz

.PHONY: build-subemu test-bngcp-fuzz

build-subemu:
	@mkdir -p $(BUILD)/bin
	@cd lab/subemu && $(GO) build -p 1 -o $(BUILD)/bin/subemu .

# Each target for a bounded time; a crash leaves its input under testdata/.
test-bngcp-fuzz: build-xdp
	@cd control && for t in $(BNGCP_FUZZ); do \
	  GO="$(GO)" ../scripts/go-fuzz $${t%%:*} $${t#*:} $(BNGCP_FUZZ_SECONDS) || exit 1; done
