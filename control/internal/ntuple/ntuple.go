// Package ntuple installs an ethtool ntuple (n-tuple filter) rule for a
// prioritised flow where the NIC supports one, so the NIC itself delivers
// the flow to the rx queue the intent names, before XDP runs.
//
// A NIC classifies on the outer headers only: a rule that names a VXLAN VNI
// or a GTP-U TEID cannot be expressed (the XDP steering paper's reason for
// parsing in XDP), nor one without a CPU/queue. The XDP cpumap steering stays in force
// either way; the ntuple rule is an acceleration, installed best-effort, and
// its failure never refuses an intent. veth has no ntuple support
// ("ntuple-filters: off [fixed]"), so in the lab this reports unsupported.
package ntuple

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"edgeplane/control/internal/steer"
)

// Runner runs ethtool; tests replace it.
type Runner func(args ...string) (string, error)

func ethtool(args ...string) (string, error) {
	out, err := exec.Command("ethtool", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ethtool %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// NIC is one interface's ntuple table.
type NIC struct {
	Iface string
	Run   Runner
}

// New returns the NIC for iface, using the real ethtool.
func New(iface string) *NIC { return &NIC{Iface: iface, Run: ethtool} }

// Supported reports whether ntuple filters are on ("ntuple-filters: on").
func (n *NIC) Supported() bool {
	out, err := n.Run("-k", n.Iface)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "ntuple-filters:"); ok {
			return strings.HasPrefix(strings.TrimSpace(v), "on")
		}
	}
	return false
}

// Args builds `ethtool -N` arguments for a rule, or returns why it cannot
// be expressed.
func Args(iface string, k steer.Key, f steer.Fields, queue uint32) ([]string, error) {
	if f&(steer.FieldVNI|steer.FieldTEID) != 0 {
		return nil, fmt.Errorf("names a tunnel id: a NIC classifies on outer headers only")
	}
	if queue == steer.NoCPU {
		return nil, fmt.Errorf("names no queue")
	}
	v6 := (f&steer.FieldSrc != 0 && k.Src.Is6()) || (f&steer.FieldDst != 0 && k.Dst.Is6())
	v4 := (f&steer.FieldSrc != 0 && k.Src.Is4()) || (f&steer.FieldDst != 0 && k.Dst.Is4())
	if v4 && v6 {
		return nil, fmt.Errorf("mixes address families")
	}
	var typ string
	switch {
	case f&steer.FieldProto == 0:
		return nil, fmt.Errorf("names no protocol (udp or tcp)")
	case k.Proto == 17:
		typ = "udp"
	case k.Proto == 6:
		typ = "tcp"
	default:
		return nil, fmt.Errorf("protocol %d has no ntuple flow type", k.Proto)
	}
	if v6 {
		typ += "6"
	} else {
		typ += "4"
	}
	args := []string{"-N", iface, "flow-type", typ}
	ip := "ip"
	if v6 {
		ip = "ip6"
	}
	if f&steer.FieldSrc != 0 {
		args = append(args, "src-"+ip, k.Src.String())
	}
	if f&steer.FieldDst != 0 {
		args = append(args, "dst-"+ip, k.Dst.String())
	}
	if f&steer.FieldSrcPort != 0 {
		args = append(args, "src-port", strconv.Itoa(int(k.SrcPort)))
	}
	if f&steer.FieldDstPort != 0 {
		args = append(args, "dst-port", strconv.Itoa(int(k.DstPort)))
	}
	return append(args, "action", strconv.FormatUint(uint64(queue), 10)), nil
}

var addedRE = regexp.MustCompile(`Added rule with ID (\d+)`)

// Add installs a rule and returns its location in the NIC's table.
func (n *NIC) Add(k steer.Key, f steer.Fields, queue uint32) (int, error) {
	args, err := Args(n.Iface, k, f, queue)
	if err != nil {
		return 0, err
	}
	out, err := n.Run(args...)
	if err != nil {
		return 0, err
	}
	m := addedRE.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("ethtool did not report the rule's location: %q", out)
	}
	return strconv.Atoi(m[1])
}

// Delete removes the rule at loc.
func (n *NIC) Delete(loc int) error {
	_, err := n.Run("-N", n.Iface, "delete", strconv.Itoa(loc))
	return err
}
