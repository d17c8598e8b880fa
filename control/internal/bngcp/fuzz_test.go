package bngcp

import (
	"context"
	"strings"
	"testing"

	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/frame"
	"edgeplane/control/internal/bngcp/pppoe"
)

// capture is the access side of the fuzz target: it keeps nothing.
type capture struct{ n int }

func (c *capture) Run(ctx context.Context, _ func(string, []byte)) error { <-ctx.Done(); return nil }
func (c *capture) Send(out []Out) int                                    { c.n += len(out); return len(out) }

const fuzzConfig = `
access: {mode: direct, iface: lo}
shards: 1
ports: [{name: access, mac: "02:00:00:00:01:01"}]
pools:
  - {name: v4, range: 198.18.100.10-198.18.100.250, gateway: 198.18.100.1/24}
  - {name: v6, prefix: "2001:db8:100::/40", block: 56, pd: 60}
profiles: [{name: p10, up_mbr: 10M, down_mbr: 10M}]
aaa: {mode: local, accept_unknown_ipoe: true, default_profile: p10}
`

// FuzzFrame sends any frame from a subscriber through the whole control
// plane (access header, PPPoE discovery and session, PPP with LCP,
// PAP/CHAP, IPCP and IPv6CP, DHCPv4 on insomniacslk/dhcp, DHCPv6, ND,
// ARP), on one shard, synchronously: no input may panic or leave a
// session in a state the API cannot list.
func FuzzFrame(f *testing.F) {
	cfg, err := ParseConfig([]byte(fuzzConfig))
	if err != nil {
		f.Fatal(err)
	}
	users := &aaa.Local{AcceptUnknown: true, DefaultProfile: "p10"}
	if err := users.Read(strings.NewReader("user0 secret profile=p10\n"), "fuzz"); err != nil {
		f.Fatal(err)
	}
	users.AcceptUnknown, users.DefaultProfile = true, "p10"
	srv, err := New(cfg, Deps{Access: &capture{}, Auth: users})
	if err != nil {
		f.Fatal(err)
	}
	sh := srv.shards[0]
	port := srv.ports["access"]
	sub := frame.MAC{2, 0xee, 0, 0, 0, 1}
	padi := frame.Append(nil, frame.Broadcast, sub, frame.Line{STag: 100, CTag: 1}, frame.TypePPPoED)
	padi, _ = pppoe.AppendDiscovery(padi, pppoe.CodePADI, 0, pppoe.Tag{Type: pppoe.TagServiceName})
	f.Add(padi)
	lcp := frame.Append(nil, port.mac, sub, frame.Line{CTag: 7}, frame.TypePPPoES)
	lcp = append(pppoe.AppendSession(lcp, 1, 0xc021), 1, 1, 0, 10, 1, 4, 5, 0xd4, 0, 0)
	f.Add(lcp)
	f.Add(frame.Append(nil, frame.Broadcast, sub, frame.Line{}, frame.TypeARP))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, _, err := frame.Parse(b)
		if err != nil || !h.Src.IsUnicast() {
			return
		}
		sh.handle(event{port: port, hdr: h, data: append([]byte(nil), b...)})
		// Whatever the loop was asked to do since (AAA and user-plane
		// answers come back as events).
		for len(sh.in) > 0 {
			sh.handle(<-sh.in)
		}
		sh.fire()
		sh.flush()
		for _, s := range sh.all {
			s.info()
		}
	})
}
