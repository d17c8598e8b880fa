package steer

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// Names are the counter names, read from BTF: the paths and drop reasons
// from the object's enum steer_path and enum steer_drop (xdp/steer/steer.h,
// the one declaration), the verdicts from the kernel's enum xdp_action.
// "PATH_PRIO_CPU" becomes "prio_cpu"; the *_MAX sentinels are left out.
type Names struct {
	Verdicts []string
	Paths    []string
	Drops    []string
}

func enumNames(spec *btf.Spec, typ, prefix string) ([]string, error) {
	var e *btf.Enum
	if err := spec.TypeByName(typ, &e); err != nil {
		return nil, fmt.Errorf("enum %s: %w", typ, err)
	}
	var out []string
	for i, v := range e.Values {
		if v.Value != uint64(i) {
			return nil, fmt.Errorf("enum %s: %s is %d, want dense values from 0", typ, v.Name, v.Value)
		}
		n := strings.ToLower(strings.TrimPrefix(v.Name, prefix))
		if n == "max" {
			break
		}
		out = append(out, n)
	}
	return out, nil
}

func loadNames(spec *ebpf.CollectionSpec) (Names, error) {
	var n Names
	var err error
	if n.Paths, err = enumNames(spec.Types, "steer_path", "PATH_"); err != nil {
		return n, err
	}
	if n.Drops, err = enumNames(spec.Types, "steer_drop", "DROP_"); err != nil {
		return n, err
	}
	kspec, err := btf.LoadKernelSpec()
	if err != nil {
		return n, fmt.Errorf("kernel BTF: %w", err)
	}
	if n.Verdicts, err = enumNames(kspec, "xdp_action", "XDP_"); err != nil {
		return n, err
	}
	return n, nil
}
