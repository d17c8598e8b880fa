package ppp

import (
	"encoding/binary"
	"net/netip"
)

// IPCP options (RFC 1332 section 3; RFC 1877 for the name servers).
const (
	IPCPOptAddresses   uint8 = 1 // deprecated IP-Addresses
	IPCPOptCompression uint8 = 2
	IPCPOptAddress     uint8 = 3
	IPCPOptDNS1        uint8 = 129
	IPCPOptNBNS1       uint8 = 130
	IPCPOptDNS2        uint8 = 131
	IPCPOptNBNS2       uint8 = 132
)

// IPCP is the server's IP Control Protocol layer: it tells the peer our
// address, assigns the peer its address and gives it DNS servers
// (a Configure-Nak with the right values for each 0.0.0.0 or wrong one).
type IPCP struct {
	Local  netip.Addr    // ours (the BNG's address on the link)
	Peer   netip.Addr    // the peer's, assigned by the pool or AAA
	DNS    [2]netip.Addr // primary, secondary (invalid: rejected)
	Events LayerEvents
}

func a4(v []byte) (netip.Addr, bool) {
	if len(v) != 4 {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4([4]byte(v)), true
}

// RequestOptions implements Layer.
func (c *IPCP) RequestOptions() []Option {
	return []Option{{IPCPOptAddress, c.Local.AsSlice()}}
}

// CheckRequest implements Layer.
func (c *IPCP) CheckRequest(opts []Option, notConverging bool) (uint8, []Option) {
	var nak, rej []Option
	want := func(o Option, v netip.Addr) {
		got, ok := a4(o.Value)
		if !ok {
			rej = append(rej, o)
			return
		}
		if got != v {
			nak = append(nak, Option{o.Type, v.AsSlice()})
		}
	}
	for _, o := range opts {
		switch o.Type {
		case IPCPOptAddress:
			want(o, c.Peer)
		case IPCPOptDNS1, IPCPOptDNS2:
			d := c.DNS[0]
			if o.Type == IPCPOptDNS2 {
				d = c.DNS[1]
			}
			if !d.IsValid() {
				rej = append(rej, o)
				continue
			}
			want(o, d)
		default:
			// IP-Addresses (deprecated), Van Jacobson compression (the
			// data plane forwards plain IP), NBNS: not offered.
			rej = append(rej, o)
		}
	}
	if len(rej) > 0 {
		return ConfRej, rej
	}
	if len(nak) > 0 {
		return nakOrReject(nak, opts, notConverging)
	}
	return ConfAck, nil
}

// Acked implements Layer.
func (c *IPCP) Acked([]Option) {}

// Naked implements Layer: a peer that wants another address for us is
// told ours again (we do not move our side of the link).
func (c *IPCP) Naked([]Option) {}

// Rejected implements Layer: a peer that rejects our address option can
// still talk to us (RFC 1332 allows an implied address).
func (c *IPCP) Rejected([]Option) {}

// Up implements Layer.
func (c *IPCP) Up() { c.Events.LayerUp(ProtoIPCP) }

// Down implements Layer.
func (c *IPCP) Down() { c.Events.LayerDown(ProtoIPCP) }

// Started implements Layer.
func (c *IPCP) Started() { c.Events.LayerStarted(ProtoIPCP) }

// Finished implements Layer.
func (c *IPCP) Finished() { c.Events.LayerFinished(ProtoIPCP) }

// IPv6CP options (RFC 5072 section 4).
const (
	IPv6CPOptInterfaceID uint8 = 1
	IPv6CPOptCompression uint8 = 2
)

// IPv6CP is the server's IPv6 Control Protocol layer: both ends agree on
// 64-bit interface identifiers, from which each forms its link-local
// address (fe80::/64 + identifier).
type IPv6CP struct {
	Local  uint64 // ours, nonzero
	Peer   uint64 // the peer's, once acked
	Rand   func() uint64
	Events LayerEvents
}

// RequestOptions implements Layer.
func (c *IPv6CP) RequestOptions() []Option {
	return []Option{{IPv6CPOptInterfaceID, binary.BigEndian.AppendUint64(nil, c.Local)}}
}

// CheckRequest implements Layer: a zero identifier, or ours, gets a
// Configure-Nak with a fresh one (RFC 5072 section 4.1).
func (c *IPv6CP) CheckRequest(opts []Option, notConverging bool) (uint8, []Option) {
	var nak, rej []Option
	var peer uint64
	for _, o := range opts {
		switch o.Type {
		case IPv6CPOptInterfaceID:
			if len(o.Value) != 8 {
				rej = append(rej, o)
				continue
			}
			v := binary.BigEndian.Uint64(o.Value)
			if v == 0 || v == c.Local {
				s := c.Rand()
				for s == 0 || s == c.Local {
					s = c.Rand()
				}
				nak = append(nak, Option{o.Type, binary.BigEndian.AppendUint64(nil, s)})
				continue
			}
			peer = v
		default:
			rej = append(rej, o)
		}
	}
	if len(rej) > 0 {
		return ConfRej, rej
	}
	if len(nak) > 0 {
		return nakOrReject(nak, opts, notConverging)
	}
	c.Peer = peer
	return ConfAck, nil
}

// Acked implements Layer.
func (c *IPv6CP) Acked([]Option) {}

// Naked implements Layer: the peer asks us to use another identifier
// (ours collided with its own).
func (c *IPv6CP) Naked(opts []Option) {
	for _, o := range opts {
		if o.Type == IPv6CPOptInterfaceID && len(o.Value) == 8 {
			if v := binary.BigEndian.Uint64(o.Value); v != 0 {
				c.Local = v
			}
		}
	}
}

// Rejected implements Layer.
func (c *IPv6CP) Rejected([]Option) {}

// Up implements Layer.
func (c *IPv6CP) Up() { c.Events.LayerUp(ProtoIPv6CP) }

// Down implements Layer.
func (c *IPv6CP) Down() { c.Events.LayerDown(ProtoIPv6CP) }

// Started implements Layer.
func (c *IPv6CP) Started() { c.Events.LayerStarted(ProtoIPv6CP) }

// Finished implements Layer.
func (c *IPv6CP) Finished() { c.Events.LayerFinished(ProtoIPv6CP) }

// LinkLocal is the link-local address of an interface identifier.
func LinkLocal(id uint64) netip.Addr {
	var a [16]byte
	a[0], a[1] = 0xfe, 0x80
	binary.BigEndian.PutUint64(a[8:], id)
	return netip.AddrFrom16(a)
}
