package upf

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"time"
)

// Config is the UP function's configuration (the `edgeplane upf` flags).
type Config struct {
	Listen   netip.AddrPort // PFCP: UDP 8805 on a configured address
	NodeID   string         // our Node ID: an address or a name (default: Listen's address)
	GTPU     netip.AddrPort // control packet redirect: GTP-U, UDP 2152 (default: Listen's address)
	DPSocket string         // edgeplane-dp's control socket
	// PuntIface is the Linux interface on which the data plane's control
	// port meets this function (punted frames in, frames to inject out);
	// empty: no redirect of frames (rules are still kept).
	PuntIface string
	StateDir  string // the session store (upf.db)

	Ports            []string // logical ports served (TR-459 Logical Port); the first is the default
	NetworkInstances []string // network instances of the core side (empty: any)
	SubIDLo, SubIDHi uint32   // data-plane subscriber ids this function owns
	MaxProfiles      int      // policer and pipe profiles it may create (each)

	HeartbeatInterval time.Duration    // towards each control plane
	T1                time.Duration    // retransmission timer of our requests
	N1                int              // retransmissions before a peer is given up
	DupRetain         time.Duration    // how long answers are kept for duplicates
	OnCPRestart       string           // "purge" (TS 29.244) or "keep" the sessions of a restarted CP
	OnCPLost          string           // "keep" or "purge" the sessions of a CP whose heartbeats stopped
	Associate         []netip.AddrPort // control planes to set up associations with (UP-initiated)

	BatchMax    int           // session changes per data-plane batch
	QueueLen    int           // changes waiting; beyond: "PFCP entity in congestion"
	Pipeline    int           // batches in flight to the data plane
	Decoders    int           // goroutines decoding and planning session requests (0: GOMAXPROCS)
	URRPoll     time.Duration // counter polling for thresholds and periodic reports
	Sync        bool          // fsync the store at every batch
	UnassocRate float64       // answers per second to peers without an association
}

// Defaults fills what was not set.
func (c *Config) Defaults() {
	if !c.Listen.IsValid() {
		c.Listen = netip.AddrPortFrom(netip.IPv4Unspecified(), 8805)
	}
	if c.NodeID == "" {
		c.NodeID = c.Listen.Addr().String()
	}
	if !c.GTPU.IsValid() {
		c.GTPU = netip.AddrPortFrom(c.Listen.Addr(), 2152)
	}
	if len(c.Ports) == 0 {
		c.Ports = []string{"access"}
	}
	if c.SubIDLo == 0 {
		c.SubIDLo = 1
	}
	if c.SubIDHi == 0 {
		c.SubIDHi = 65536
	}
	if c.MaxProfiles == 0 {
		c.MaxProfiles = 128
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = 10 * time.Second
	}
	if c.T1 == 0 {
		c.T1 = 3 * time.Second
	}
	if c.N1 == 0 {
		c.N1 = 3
	}
	if c.DupRetain == 0 {
		c.DupRetain = 30 * time.Second
	}
	if c.OnCPRestart == "" {
		c.OnCPRestart = "purge"
	}
	if c.OnCPLost == "" {
		c.OnCPLost = "keep"
	}
	if c.BatchMax == 0 {
		c.BatchMax = 2048
	}
	if c.QueueLen == 0 {
		c.QueueLen = 32768
	}
	if c.Pipeline == 0 {
		c.Pipeline = 2
	}
	if c.Decoders == 0 {
		c.Decoders = min(runtime.GOMAXPROCS(0), 8)
	}
	if c.URRPoll == 0 {
		c.URRPoll = time.Second
	}
	if c.UnassocRate == 0 {
		c.UnassocRate = 100
	}
}

// Check refuses a configuration that cannot work.
func (c *Config) Check() error {
	if c.DPSocket == "" {
		return errors.New("no data-plane control socket (--dp-socket)")
	}
	if c.StateDir == "" {
		return errors.New("no state directory (--state-dir)")
	}
	if c.OnCPRestart != "purge" && c.OnCPRestart != "keep" {
		return fmt.Errorf("on-cp-restart %q: purge or keep", c.OnCPRestart)
	}
	if c.OnCPLost != "purge" && c.OnCPLost != "keep" {
		return fmt.Errorf("on-cp-lost %q: purge or keep", c.OnCPLost)
	}
	if c.SubIDLo == 0 || c.SubIDHi < c.SubIDLo {
		return fmt.Errorf("subscriber ids %d-%d", c.SubIDLo, c.SubIDHi)
	}
	if c.MaxProfiles < 1 || c.MaxProfiles > 250 {
		return fmt.Errorf("max profiles %d: 1..250 (the data plane holds 256 of each)", c.MaxProfiles)
	}
	if c.Decoders < 1 || c.Decoders > 64 {
		return fmt.Errorf("decoders %d: 1..64", c.Decoders)
	}
	if c.BatchMax < 1 || c.BatchMax > 16384 {
		return fmt.Errorf("batch %d: 1..16384 (a batch is one control-socket line, at most 8 MiB)", c.BatchMax)
	}
	for _, p := range c.Ports {
		if p == "" || len(p) > 255 {
			return fmt.Errorf("logical port %q", p)
		}
	}
	if !c.GTPU.Addr().Is4() && !c.GTPU.Addr().IsUnspecified() {
		return errors.New("the redirect's GTP-U address must be IPv4")
	}
	return nil
}
