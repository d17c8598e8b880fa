package sci

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/ipv4"

	"edgeplane/control/internal/bngcp"
	"edgeplane/control/internal/gtpu"
)

// CPR is the control packet redirect's GTP-U endpoint (TR-459 CPRi): the
// user planes send subscribers' control frames here in G-PDUs (TS 29.281,
// the T-PDU being the Ethernet frame with its tags) on the TEID of the
// logical port's default rule; we send frames back on the TEID each user
// plane chose for the port.  It is the control plane's bngcp.Access in
// cpr mode.  Sending is batched: one sendmmsg for what a shard built.
type CPR struct {
	s    *SCI
	conn *net.UDPConn
	pc   *ipv4.PacketConn

	Rx, RxBad, RxNoTEID, Tx, TxNoTunnel, TxErr, Echo atomic.Uint64
}

func newCPR(s *SCI, addr netip.AddrPort) (*CPR, error) {
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
	if err != nil {
		return nil, fmt.Errorf("gtp-u socket %s: %w", addr, err)
	}
	c.SetReadBuffer(16 << 20)
	c.SetWriteBuffer(16 << 20)
	return &CPR{s: s, conn: c, pc: ipv4.NewPacketConn(c)}, nil
}

// addr is the address the user planes send to (our F-TEID's address).
func (c *CPR) addr() netip.Addr {
	a := c.conn.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
	if a.IsUnspecified() {
		a = c.s.cfg.Listen.Addr()
	}
	return a
}

func (c *CPR) close() { c.conn.Close() }

// portOf finds the logical port of one of our TEIDs: a default
// session's (upTEID) or a PPPoE session's own (sessionTEID).
func (c *CPR) portOf(teid uint32) (string, bool) {
	var ui, pi int
	switch {
	case teid&0x80000000 != 0:
		ui, pi = int(teid>>24&0x7f), int(teid>>16&0xff)
	case teid&0xfff00000 == 0x00100000:
		ui, pi = int(teid>>8&0xfff), int(teid&0xff)
	default:
		return "", false
	}
	if ui >= len(c.s.ups) || pi >= len(c.s.ups[ui].cfg.Ports) {
		return "", false
	}
	return c.s.ups[ui].cfg.Ports[pi], true
}

// Run implements bngcp.Access.
func (c *CPR) Run(ctx context.Context, deliver func(port string, frame []byte)) error {
	go func() {
		<-ctx.Done()
		c.conn.SetReadDeadline(time.Now())
	}()
	msgs := make([]ipv4.Message, 64)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{make([]byte, 9216)}
	}
	var g layers.GTPv1U
	for {
		n, err := c.pc.ReadBatch(msgs, 0)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return ctx.Err()
			}
			continue
		}
		for i := 0; i < n; i++ {
			b := msgs[i].Buffers[0][:msgs[i].N]
			if err := g.DecodeFromBytes(b, gopacket.NilDecodeFeedback); err != nil || g.Version != 1 {
				c.RxBad.Add(1)
				continue
			}
			switch g.MessageType {
			case 255:
			case 1: // Echo Request (TS 29.281 7.2.1): answer with Recovery 0
				c.echo(&g, msgs[i].Addr)
				continue
			default:
				c.RxBad.Add(1)
				continue
			}
			port, ok := c.portOf(g.TEID)
			if !ok {
				c.RxNoTEID.Add(1)
				continue
			}
			c.Rx.Add(1)
			deliver(port, g.Payload)
		}
	}
}

func (c *CPR) echo(g *layers.GTPv1U, to net.Addr) {
	buf := gopacket.NewSerializeBuffer()
	r := &layers.GTPv1U{Version: 1, ProtocolType: 1, MessageType: 2, SequenceNumberFlag: g.SequenceNumberFlag,
		SequenceNumber: g.SequenceNumber}
	if gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, r, gopacket.Payload([]byte{14, 0})) == nil {
		c.conn.WriteTo(buf.Bytes(), to)
		c.Echo.Add(1)
	}
}

// Send implements bngcp.Access.
func (c *CPR) Send(out []bngcp.Out) int {
	msgs := make([]ipv4.Message, 0, len(out))
	c.s.mu.Lock()
	for _, o := range out {
		u := c.s.byPort[o.Port]
		if u == nil || !u.defReady {
			c.TxNoTunnel.Add(1)
			continue
		}
		t, ok := c.s.tunnels[o.Session]
		if o.Session == 0 || !ok {
			t, ok = u.down[o.Port]
		}
		if !ok {
			c.TxNoTunnel.Add(1)
			continue
		}
		msgs = append(msgs, ipv4.Message{Buffers: [][]byte{gtpu.AppendGPDU(make([]byte, 0, gtpu.HeaderLen+len(o.Frame)), t.TEID, o.Frame)},
			Addr: net.UDPAddrFromAddrPort(netip.AddrPortFrom(t.Addr, 2152))})
	}
	c.s.mu.Unlock()
	sent := 0
	for len(msgs) > 0 {
		n, err := c.pc.WriteBatch(msgs, 0)
		if err != nil {
			c.TxErr.Add(uint64(len(msgs)))
			break
		}
		sent += n
		msgs = msgs[n:]
	}
	c.Tx.Add(uint64(sent))
	return sent
}

func (c *CPR) stats() map[string]uint64 {
	return map[string]uint64{"rx": c.Rx.Load(), "rx_bad": c.RxBad.Load(), "rx_unknown_teid": c.RxNoTEID.Load(),
		"tx": c.Tx.Load(), "tx_no_tunnel": c.TxNoTunnel.Load(), "tx_errors": c.TxErr.Load(), "echo": c.Echo.Load()}
}
