// Package nd is the BNG's side of the subscriber link's neighbour
// protocols: IPv6 router advertisements (RFC 4861 section 4.2, answering
// router solicitations and sent unsolicited), neighbour advertisements for
// the gateway's own addresses, and ARP replies for the IPv4 gateway
// (RFC 826).  The data plane answers ARP and NS for its access port's
// addresses itself when configured to; what it punts comes here.
package nd

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"time"

	"edgeplane/control/internal/bngcp/frame"
)

// ICMPv6 types (RFC 4861).
const (
	TypeRS uint8 = 133
	TypeRA uint8 = 134
	TypeNS uint8 = 135
	TypeNA uint8 = 136
)

// Option types (RFC 4861 section 4.6; RFC 8106 for RDNSS).
const (
	optSourceLL   uint8 = 1
	optTargetLL   uint8 = 2
	optPrefixInfo uint8 = 3
	optMTU        uint8 = 5
	optRDNSS      uint8 = 25
)

// AllNodes is ff02::1.
var AllNodes = netip.MustParseAddr("ff02::1")

// LinkLocal is the BNG's link-local address on the access side, the
// modified EUI-64 of its MAC (RFC 4291 appendix A).
func LinkLocal(m frame.MAC) netip.Addr {
	var a [16]byte
	a[0], a[1] = 0xfe, 0x80
	a[8], a[9], a[10] = m[0]^0x02, m[1], m[2]
	a[11], a[12] = 0xff, 0xfe
	a[13], a[14], a[15] = m[3], m[4], m[5]
	return netip.AddrFrom16(a)
}

// RA is a router advertisement's content.
type RA struct {
	Managed, Other bool          // M and O flags: addresses / other configuration by DHCPv6
	Lifetime       time.Duration // router lifetime (0: not a default router)
	Prefix         netip.Prefix  // invalid: none
	OnLink, Auto   bool          // the prefix's L and A flags
	Valid, Pref    time.Duration // its lifetimes
	MTU            uint32        // 0: no MTU option
	DNS            []netip.Addr  // RDNSS (RFC 8106)
	DNSLifetime    time.Duration
}

func secs(d time.Duration) uint32 {
	if d < 0 {
		return 0
	}
	s := d / time.Second
	if s > 0xffffffff {
		return 0xffffffff
	}
	return uint32(s)
}

// Body is the RA's ICMPv6 body after the checksum: hop limit, flags,
// router lifetime, reachable time, retrans timer, options.
func (r *RA) Body(src frame.MAC) []byte {
	b := make([]byte, 0, 128)
	flags := byte(0)
	if r.Managed {
		flags |= 0x80
	}
	if r.Other {
		flags |= 0x40
	}
	lt := r.Lifetime / time.Second
	if lt > 9000 {
		lt = 9000
	}
	b = append(b, 64, flags)
	b = binary.BigEndian.AppendUint16(b, uint16(lt))
	b = binary.BigEndian.AppendUint32(b, 0) // reachable time: unspecified
	b = binary.BigEndian.AppendUint32(b, 0) // retrans timer: unspecified
	b = append(b, optSourceLL, 1)
	b = append(b, src[:]...)
	if r.MTU != 0 {
		b = append(b, optMTU, 1, 0, 0)
		b = binary.BigEndian.AppendUint32(b, r.MTU)
	}
	if r.Prefix.IsValid() {
		pf := byte(0)
		if r.OnLink {
			pf |= 0x80
		}
		if r.Auto {
			pf |= 0x40
		}
		b = append(b, optPrefixInfo, 4, byte(r.Prefix.Bits()), pf)
		b = binary.BigEndian.AppendUint32(b, secs(r.Valid))
		b = binary.BigEndian.AppendUint32(b, secs(r.Pref))
		b = binary.BigEndian.AppendUint32(b, 0)
		a := r.Prefix.Masked().Addr().As16()
		b = append(b, a[:]...)
	}
	if len(r.DNS) > 0 {
		b = append(b, optRDNSS, byte(1+2*len(r.DNS)), 0, 0)
		b = binary.BigEndian.AppendUint32(b, secs(r.DNSLifetime))
		for _, d := range r.DNS {
			a := d.As16()
			b = append(b, a[:]...)
		}
	}
	return b
}

// Errors.
var ErrMalformed = errors.New("nd: malformed message")

// ParseNS reads a neighbour solicitation's target and source link-layer
// address option (absent: zero MAC).
func ParseNS(body []byte) (target netip.Addr, sll frame.MAC, err error) {
	if len(body) < 20 {
		return target, sll, ErrMalformed
	}
	target = netip.AddrFrom16([16]byte(body[4:20]))
	opts := body[20:]
	for len(opts) >= 8 {
		n := int(opts[1]) * 8
		if n == 0 || n > len(opts) {
			return target, sll, ErrMalformed
		}
		if opts[0] == optSourceLL && n == 8 {
			copy(sll[:], opts[2:8])
		}
		opts = opts[n:]
	}
	return target, sll, nil
}

// CheckRS validates a router solicitation's options (lengths nonzero and
// inside the message); it returns the source link-layer address if any.
func CheckRS(body []byte) (frame.MAC, error) {
	var sll frame.MAC
	if len(body) < 4 {
		return sll, ErrMalformed
	}
	opts := body[4:]
	for len(opts) > 0 {
		if len(opts) < 8 {
			return sll, ErrMalformed
		}
		n := int(opts[1]) * 8
		if n == 0 || n > len(opts) {
			return sll, ErrMalformed
		}
		if opts[0] == optSourceLL && n == 8 {
			copy(sll[:], opts[2:8])
		}
		opts = opts[n:]
	}
	return sll, nil
}

// NABody is a solicited neighbour advertisement for target with our MAC
// (router, solicited and override flags set).
func NABody(target netip.Addr, mac frame.MAC) []byte {
	b := []byte{0xe0, 0, 0, 0}
	a := target.As16()
	b = append(b, a[:]...)
	b = append(b, optTargetLL, 1)
	return append(b, mac[:]...)
}

// ARP is an Ethernet/IPv4 ARP packet (RFC 826).
type ARP struct {
	Op        uint16 // 1 request, 2 reply
	SenderMAC frame.MAC
	SenderIP  netip.Addr
	TargetMAC frame.MAC
	TargetIP  netip.Addr
}

// ParseARP reads an Ethernet/IPv4 ARP packet.
func ParseARP(b []byte) (ARP, error) {
	var a ARP
	if len(b) < 28 || binary.BigEndian.Uint16(b) != 1 || binary.BigEndian.Uint16(b[2:]) != 0x0800 ||
		b[4] != 6 || b[5] != 4 {
		return a, ErrMalformed
	}
	a.Op = binary.BigEndian.Uint16(b[6:])
	copy(a.SenderMAC[:], b[8:14])
	a.SenderIP = netip.AddrFrom4([4]byte(b[14:18]))
	copy(a.TargetMAC[:], b[18:24])
	a.TargetIP = netip.AddrFrom4([4]byte(b[24:28]))
	return a, nil
}

// Append writes the ARP packet.
func (a ARP) Append(dst []byte) []byte {
	dst = append(dst, 0, 1, 0x08, 0, 6, 4)
	dst = binary.BigEndian.AppendUint16(dst, a.Op)
	dst = append(dst, a.SenderMAC[:]...)
	s := a.SenderIP.As4()
	dst = append(dst, s[:]...)
	dst = append(dst, a.TargetMAC[:]...)
	t := a.TargetIP.As4()
	return append(dst, t[:]...)
}
