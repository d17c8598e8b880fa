package xdpfwd

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// CounterNames are the fast path's counters in index order, read from the
// object's BTF enum fwd_counter (generated from xdp/fwd/fwd_reasons.def,
// the one list): "FWD_PUNT_TTL" becomes "punt_ttl"; FWD_MAX is left out.
func CounterNames(spec *ebpf.CollectionSpec) ([]string, error) {
	var e *btf.Enum
	if err := spec.Types.TypeByName("fwd_counter", &e); err != nil {
		return nil, fmt.Errorf("enum fwd_counter: %w", err)
	}
	var out []string
	for i, v := range e.Values {
		if v.Value != uint64(i) {
			return nil, fmt.Errorf("enum fwd_counter: %s is %d, want dense values from 0", v.Name, v.Value)
		}
		n := strings.ToLower(strings.TrimPrefix(v.Name, "FWD_"))
		if n == "max" {
			break
		}
		out = append(out, n)
	}
	return out, nil
}

// Spec is the compiled program's collection spec.
func Spec() (*ebpf.CollectionSpec, error) { return loadFwd() }
