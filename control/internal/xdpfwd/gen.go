// Package xdpfwd holds the router's XDP fast path (xdp/fwd/fwd.bpf.c) for
// Go: its compiled object, which the build copies to build/xdp/fwd.o for
// net_af_xdp's xdp_prog devarg, and the BPF_PROG_TEST_RUN tests of the
// program. edgeplane-dp's control path (dataplane/router/xdp_fast.c), not
// this package, writes the maps of the copies the PMD attaches.
package xdpfwd

// The objects are compiled at build time (make build-xdp), not committed.
// -type emits the C layouts of fwd.h, so the tests write what the program
// reads. -mcpu=v3: 32-bit ALU and jumps, as the steering program. The
// second object, xdp/fwd_min, is the floor of any XDP forwarder, which
// BenchmarkProgramCost times the program against; it is never shipped.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" -target bpfel -type fwd_cfg -type fwd_nh -type fwd_lpm4_key -type fwd_lpm6_key fwd ../../../xdp/fwd/fwd.bpf.c -- -I/usr/include/x86_64-linux-gnu
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" -target bpfel -type fwd_min_nh fwdMin ../../../xdp/fwd_min/fwd_min.bpf.c -- -I/usr/include/x86_64-linux-gnu

// The same work at tc ingress (xdp/fwd/tcfwd.bpf.c, the maps of fwd.h): the
// router's fast_path = tc (dataplane/router/xdp_fast_tc.c loads
// build/xdp/tcfwd.o, the build's copy) and bench/wire_tc.py's programs.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" -target bpfel -type fwd_cfg -type fwd_nh -type fwd_lpm4_key -type fwd_lpm6_key tcfwd ../../../xdp/fwd/tcfwd.bpf.c -- -I/usr/include/x86_64-linux-gnu
