package agent

import (
	"golang.org/x/sys/unix"
)

const bpffsMagic = 0xcafe4a11

func isBPFFS(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && uint32(st.Type) == bpffsMagic
}

func mountBPFFS(dir string) error { return unix.Mount("bpf", dir, "bpf", 0, "mode=0700") }
