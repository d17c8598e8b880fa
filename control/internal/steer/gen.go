// Package steer loads the XDP steering program (xdp/steer/steer.bpf.c),
// attaches it, pins its maps and reads and writes them. It is the only
// package that touches the maps; the intent engine and the agent go through
// its methods.
package steer

// The objects are compiled at build time (make build-xdp), not committed.
// -type makes bpf2go emit Go types with the C layouts from steer.h, so the
// two sides cannot disagree on a field offset. -mcpu=v3 (kernel 5.1+) lets
// clang use 32-bit ALU and jump instructions instead of zero-extending
// 32-bit values with shift pairs: 4% less JITed code.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" -target bpfel -type flow_key -type flow_mask -type prio_value -type alt_node -type node_state -type steer_counters -type steer_path -type steer_drop -type datarec steer ../../../xdp/steer/steer.bpf.c -- -I/usr/include/x86_64-linux-gnu
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel noop ../../../xdp/noop/noop.bpf.c -- -I/usr/include/x86_64-linux-gnu
