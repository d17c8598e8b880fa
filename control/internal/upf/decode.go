package upf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"

	"github.com/wmnsk/go-pfcp/ie"
)

// Reject is a refusal: the PFCP cause, the IE that caused it (Offending
// IE, clause 8.2.22) and, for rule errors, the rule (Failed Rule ID).
type Reject struct {
	Cause    uint8
	IE       uint16 // 0: none
	RuleType uint8  // Failed Rule ID type: 0 PDR, 1 FAR, 2 QER, 3 URR
	RuleID   uint32
	HasRule  bool
	Msg      string
	cpSEID   uint64 // the control plane's SEID, for the answer's header
}

func (r *Reject) Error() string {
	return fmt.Sprintf("cause %d (%s): %s", r.Cause, CauseName(r.Cause), r.Msg)
}

func reject(cause uint8, ieType uint16, format string, a ...any) *Reject {
	return &Reject{Cause: cause, IE: ieType, Msg: fmt.Sprintf(format, a...)}
}

func ruleReject(cause uint8, rtype uint8, id uint32, ieType uint16, format string, a ...any) *Reject {
	return &Reject{Cause: cause, IE: ieType, RuleType: rtype, RuleID: id, HasRule: true,
		Msg: fmt.Sprintf(format, a...)}
}

// Failed Rule ID types (clause 8.2.80).
const (
	RulePDR uint8 = 0
	RuleFAR uint8 = 1
	RuleQER uint8 = 2
	RuleURR uint8 = 3
)

// CauseName is the cause's name in TS 29.244 clause 8.2.1.
func CauseName(c uint8) string {
	switch c {
	case ie.CauseRequestAccepted:
		return "Request accepted"
	case ie.CauseRequestRejected:
		return "Request rejected"
	case ie.CauseSessionContextNotFound:
		return "Session context not found"
	case ie.CauseMandatoryIEMissing:
		return "Mandatory IE missing"
	case ie.CauseConditionalIEMissing:
		return "Conditional IE missing"
	case ie.CauseInvalidLength:
		return "Invalid length"
	case ie.CauseMandatoryIEIncorrect:
		return "Mandatory IE incorrect"
	case ie.CauseInvalidForwardingPolicy:
		return "Invalid Forwarding Policy"
	case ie.CauseInvalidFTEIDAllocationOption:
		return "Invalid F-TEID allocation option"
	case ie.CauseNoEstablishedPFCPAssociation:
		return "No established PFCP Association"
	case ie.CauseRuleCreationModificationFailure:
		return "Rule creation/modification Failure"
	case ie.CausePFCPEntityInCongestion:
		return "PFCP entity in congestion"
	case ie.CauseNoResourcesAvailable:
		return "No resources available"
	case ie.CauseServiceNotSupported:
		return "Service not supported"
	case ie.CauseSystemFailure:
		return "System failure"
	}
	return fmt.Sprintf("cause %d", c)
}

// badIE turns a decoder's error on IE i into a refusal: too short is
// "Invalid length", anything else "Mandatory IE incorrect".
func badIE(i *ie.IE, err error) *Reject {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ie.ErrInvalidLength) {
		return reject(ie.CauseInvalidLength, i.Type, "IE type %d: too short (%d octets)", i.Type, len(i.Payload))
	}
	return reject(ie.CauseMandatoryIEIncorrect, i.Type, "IE type %d: %v", i.Type, err)
}

// The decoders below are ours where go-pfcp v0.0.24 accepts what the
// standard does not (a Node ID address of the wrong length becomes
// "<nil>"; a UE IP Address with both IPv6D and IP6PL reads one octet for
// both), and for the F-SEID, F-TEID and Outer Header Creation, whose every
// flag combination matters to us.

func decodeNodeID(i *ie.IE) (string, *Reject) {
	b := i.Payload
	if len(b) < 2 {
		return "", reject(ie.CauseInvalidLength, i.Type, "Node ID: %d octets", len(b))
	}
	switch b[0] & 0x0f {
	case 0:
		if len(b) != 5 {
			return "", reject(ie.CauseInvalidLength, i.Type, "Node ID: IPv4 of %d octets", len(b)-1)
		}
		return netip.AddrFrom4([4]byte(b[1:5])).String(), nil
	case 1:
		if len(b) != 17 {
			return "", reject(ie.CauseInvalidLength, i.Type, "Node ID: IPv6 of %d octets", len(b)-1)
		}
		return netip.AddrFrom16([16]byte(b[1:17])).String(), nil
	case 2:
		// A domain name as DNS labels (clause 8.2.38, RFC 1035 3.1).
		var labels []string
		for rest := b[1:]; len(rest) > 0; {
			l := int(rest[0])
			if l == 0 || l > 63 || l+1 > len(rest) {
				return "", reject(ie.CauseMandatoryIEIncorrect, i.Type, "Node ID: malformed FQDN")
			}
			labels = append(labels, string(rest[1:1+l]))
			rest = rest[1+l:]
		}
		name := strings.Join(labels, ".")
		if len(name) > 255 {
			return "", reject(ie.CauseMandatoryIEIncorrect, i.Type, "Node ID: FQDN longer than 255")
		}
		return name, nil
	}
	return "", reject(ie.CauseMandatoryIEIncorrect, i.Type, "Node ID: type %d", b[0]&0x0f)
}

// fseid is an F-SEID (clause 8.2.37).
type fseid struct {
	SEID uint64
	Addr netip.Addr
}

func decodeFSEID(i *ie.IE) (fseid, *Reject) {
	b := i.Payload
	if len(b) < 9 {
		return fseid{}, reject(ie.CauseInvalidLength, i.Type, "F-SEID: %d octets", len(b))
	}
	f := fseid{SEID: binary.BigEndian.Uint64(b[1:9])}
	v4, v6 := b[0]&0x02 != 0, b[0]&0x01 != 0
	rest := b[9:]
	if v4 {
		if len(rest) < 4 {
			return fseid{}, reject(ie.CauseInvalidLength, i.Type, "F-SEID: V4 set, no address")
		}
		f.Addr = netip.AddrFrom4([4]byte(rest[:4]))
		rest = rest[4:]
	}
	if v6 {
		if len(rest) < 16 {
			return fseid{}, reject(ie.CauseInvalidLength, i.Type, "F-SEID: V6 set, no address")
		}
		if !f.Addr.IsValid() {
			f.Addr = netip.AddrFrom16([16]byte(rest[:16]))
		}
	}
	if !v4 && !v6 {
		return fseid{}, reject(ie.CauseMandatoryIEIncorrect, i.Type, "F-SEID: neither V4 nor V6")
	}
	return f, nil
}

func decodeFTEID(i *ie.IE) (FTEID, *Reject) {
	b := i.Payload
	if len(b) < 1 {
		return FTEID{}, reject(ie.CauseInvalidLength, i.Type, "F-TEID: empty")
	}
	fl := b[0]
	v4, v6, ch, chid := fl&0x01 != 0, fl&0x02 != 0, fl&0x04 != 0, fl&0x08 != 0
	if ch {
		// CHOOSE: the UP function picks the TEID and address (V4/V6 say
		// which family); an optional CHOOSE ID groups PDRs sharing one.
		f := FTEID{Choose: true}
		if chid {
			if len(b) < 2 {
				return FTEID{}, reject(ie.CauseInvalidLength, i.Type, "F-TEID: CHID set, no CHOOSE ID")
			}
			f.ChooseID = b[1]
		}
		if v6 && !v4 {
			return FTEID{}, reject(ie.CauseInvalidFTEIDAllocationOption, i.Type, "F-TEID: CHOOSE IPv6 only: the redirect runs on IPv4")
		}
		return f, nil
	}
	if len(b) < 5 {
		return FTEID{}, reject(ie.CauseInvalidLength, i.Type, "F-TEID: %d octets", len(b))
	}
	f := FTEID{TEID: binary.BigEndian.Uint32(b[1:5])}
	rest := b[5:]
	if v4 {
		if len(rest) < 4 {
			return FTEID{}, reject(ie.CauseInvalidLength, i.Type, "F-TEID: V4 set, no address")
		}
		f.Addr = netip.AddrFrom4([4]byte(rest[:4]))
	} else if v6 {
		return FTEID{}, reject(ie.CauseServiceNotSupported, i.Type, "F-TEID: IPv6 redirect tunnels are not supported")
	} else {
		return FTEID{}, reject(ie.CauseMandatoryIEIncorrect, i.Type, "F-TEID: neither V4 nor V6")
	}
	return f, nil
}

func decodeOHC(i *ie.IE) (OHC, *Reject) {
	b := i.Payload
	if len(b) < 2 {
		return OHC{}, reject(ie.CauseInvalidLength, i.Type, "Outer Header Creation: %d octets", len(b))
	}
	o := OHC{Desc: binary.BigEndian.Uint16(b)}
	switch o.Desc {
	case OHCGTPUUDPIPv4:
		if len(b) < 10 {
			return OHC{}, reject(ie.CauseInvalidLength, i.Type, "Outer Header Creation GTP-U/UDP/IPv4: %d octets", len(b))
		}
		o.TEID = binary.BigEndian.Uint32(b[2:6])
		o.Addr = netip.AddrFrom4([4]byte(b[6:10]))
		return o, nil
	}
	return OHC{}, reject(ie.CauseServiceNotSupported, i.Type,
		"Outer Header Creation description %#04x: only GTP-U/UDP/IPv4 towards the control plane", o.Desc)
}

// decodeUEIP decodes a UE IP Address (clause 8.2.62) and appends its
// addresses to out.  An IPv6 address stands for its prefix: /64, or 64 -
// IPv6 Prefix Delegation Bits, or the IPv6 Prefix Length.
func decodeUEIP(out []UEIP, i *ie.IE) ([]UEIP, *Reject) {
	b := i.Payload
	if len(b) < 1 {
		return nil, reject(ie.CauseInvalidLength, i.Type, "UE IP Address: empty")
	}
	fl := b[0]
	v6, v4, sd, v6d, chv4, chv6, ip6pl := fl&0x01 != 0, fl&0x02 != 0, fl&0x04 != 0, fl&0x08 != 0,
		fl&0x10 != 0, fl&0x20 != 0, fl&0x40 != 0
	if chv4 || chv6 {
		return nil, reject(ie.CauseServiceNotSupported, i.Type, "UE IP Address: CHOOSE: addresses are the control plane's to allocate")
	}
	rest := b[1:]
	if out == nil {
		out = make([]UEIP, 0, 2) // dual stack: an IPv4 and an IPv6 IE
	}
	if v4 {
		if len(rest) < 4 {
			return nil, reject(ie.CauseInvalidLength, i.Type, "UE IP Address: V4 set, no address")
		}
		out = append(out, UEIP{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte(rest[:4])), 32), Dest: sd})
		rest = rest[4:]
	}
	if v6 {
		if len(rest) < 16 {
			return nil, reject(ie.CauseInvalidLength, i.Type, "UE IP Address: V6 set, no address")
		}
		a := netip.AddrFrom16([16]byte(rest[:16]))
		rest = rest[16:]
		plen := 64
		if v6d {
			if len(rest) < 1 {
				return nil, reject(ie.CauseInvalidLength, i.Type, "UE IP Address: IPv6D set, no bits")
			}
			if rest[0] > 64 {
				return nil, reject(ie.CauseMandatoryIEIncorrect, i.Type, "UE IP Address: %d delegation bits", rest[0])
			}
			plen = 64 - int(rest[0])
			rest = rest[1:]
		}
		if ip6pl {
			if len(rest) < 1 {
				return nil, reject(ie.CauseInvalidLength, i.Type, "UE IP Address: IP6PL set, no length")
			}
			if rest[0] > 128 {
				return nil, reject(ie.CauseMandatoryIEIncorrect, i.Type, "UE IP Address: prefix length %d", rest[0])
			}
			plen = int(rest[0])
		}
		p, err := a.Prefix(plen)
		if err != nil {
			return nil, reject(ie.CauseMandatoryIEIncorrect, i.Type, "UE IP Address: %v", err)
		}
		out = append(out, UEIP{Prefix: p, Dest: sd})
	}
	if !v4 && !v6 {
		return nil, reject(ie.CauseMandatoryIEIncorrect, i.Type, "UE IP Address: neither V4 nor V6")
	}
	return out, nil
}

// decodeMACBytes decodes a MAC Address IE (clause 8.2.93): the source MAC,
// which identifies a subscriber (parser.macText gives its text).
func decodeMACBytes(i *ie.IE) ([6]byte, *Reject) {
	b := i.Payload
	if len(b) < 1 {
		return [6]byte{}, reject(ie.CauseInvalidLength, i.Type, "MAC address: empty")
	}
	fl := b[0]
	if fl&0x0e != 0 {
		return [6]byte{}, reject(ie.CauseServiceNotSupported, i.Type, "MAC address: only a source MAC (SOUR) identifies a subscriber")
	}
	if fl&0x01 == 0 || len(b) < 7 {
		return [6]byte{}, reject(ie.CauseMandatoryIEIncorrect, i.Type, "MAC address: no source MAC")
	}
	mac := net.HardwareAddr(b[1:7])
	if mac[0]&0x01 != 0 {
		return [6]byte{}, reject(ie.CauseMandatoryIEIncorrect, i.Type, "MAC address %s is a group address", mac)
	}
	return [6]byte(mac), nil
}

func decodeTag(i *ie.IE) (*VLAN, *Reject) {
	// Clauses 8.2.94 / 8.2.95: flags (PCP, DEI, VID present), then
	// DEI|PCP|VID high nibble, VID low octet.
	b := i.Payload
	if len(b) < 3 {
		return nil, reject(ie.CauseInvalidLength, i.Type, "VLAN tag: %d octets", len(b))
	}
	if b[0]&0x04 == 0 {
		return nil, reject(ie.CauseMandatoryIEIncorrect, i.Type, "VLAN tag without a VID")
	}
	vid := uint16(b[1]&0x0f)<<8 | uint16(b[2])
	if vid == 0 || vid == 4095 {
		return nil, reject(ie.CauseMandatoryIEIncorrect, i.Type, "VLAN id %d", vid)
	}
	return &vlanIDs[vid], nil
}

// vlanIDs are the VLAN values decodeTag hands out, one per VID, shared
// (a VLAN is never changed once decoded): two allocations a tagged
// Traffic Endpoint fewer.
var vlanIDs = func() (t [4096]VLAN) {
	for i := range t {
		t[i].VID = uint16(i)
	}
	return
}()

// decodeFramedRoute reads a Framed-Route (RFC 2865 5.22 text, "prefix
// [gateway [metric]]"), or a Framed-IPv6-Route.
func decodeFramedRoute(i *ie.IE) (netip.Prefix, *Reject) {
	f := strings.Fields(string(i.Payload))
	if len(f) == 0 {
		return netip.Prefix{}, reject(ie.CauseMandatoryIEIncorrect, i.Type, "Framed-Route: empty")
	}
	p, err := netip.ParsePrefix(f[0])
	if err != nil {
		return netip.Prefix{}, reject(ie.CauseMandatoryIEIncorrect, i.Type, "Framed-Route %q: %v", f[0], err)
	}
	if p != p.Masked() {
		return netip.Prefix{}, reject(ie.CauseMandatoryIEIncorrect, i.Type, "Framed-Route %s has host bits", p)
	}
	return p, nil
}

// decodeVolume reads a Volume Threshold (clause 8.2.13).
func decodeVolume(i *ie.IE) (Volume, *Reject) {
	b := i.Payload
	if len(b) < 1 {
		return Volume{}, reject(ie.CauseInvalidLength, i.Type, "volume: empty")
	}
	fl := b[0]
	rest := b[1:]
	var v Volume
	for _, f := range []struct {
		bit uint8
		dst *uint64
	}{{0x01, &v.Total}, {0x02, &v.UL}, {0x04, &v.DL}} {
		if fl&f.bit == 0 {
			continue
		}
		if len(rest) < 8 {
			return Volume{}, reject(ie.CauseInvalidLength, i.Type, "volume: flag %#x set, no value", f.bit)
		}
		*f.dst = binary.BigEndian.Uint64(rest)
		rest = rest[8:]
	}
	return v, nil
}

// decodeTriggers packs the reporting triggers' octets into one number.
func decodeTriggers(i *ie.IE) (uint32, *Reject) {
	b := i.Payload
	if len(b) < 2 {
		return 0, reject(ie.CauseInvalidLength, i.Type, "Reporting Triggers: %d octets", len(b))
	}
	var t uint32
	for k := 0; k < len(b) && k < 4; k++ {
		t |= uint32(b[k]) << (8 * k)
	}
	return t, nil
}

func u32(i *ie.IE) (uint32, *Reject) {
	if len(i.Payload) < 4 {
		return 0, reject(ie.CauseInvalidLength, i.Type, "IE type %d: %d octets, want 4", i.Type, len(i.Payload))
	}
	return binary.BigEndian.Uint32(i.Payload), nil
}

func u16(i *ie.IE) (uint16, *Reject) {
	if len(i.Payload) < 2 {
		return 0, reject(ie.CauseInvalidLength, i.Type, "IE type %d: %d octets, want 2", i.Type, len(i.Payload))
	}
	return binary.BigEndian.Uint16(i.Payload), nil
}

func u8(i *ie.IE) (uint8, *Reject) {
	if len(i.Payload) < 1 {
		return 0, reject(ie.CauseInvalidLength, i.Type, "IE type %d: empty", i.Type)
	}
	return i.Payload[0], nil
}

// bitrates decodes an MBR or GBR (clause 8.2.8): UL then DL, 5 octets
// each, kbit/s.
func bitrates(i *ie.IE) (ul, dl uint64, r *Reject) {
	b := i.Payload
	if len(b) < 10 {
		return 0, 0, reject(ie.CauseInvalidLength, i.Type, "bit rate: %d octets, want 10", len(b))
	}
	rd := func(p []byte) uint64 {
		return uint64(p[0])<<32 | uint64(binary.BigEndian.Uint32(p[1:5]))
	}
	return rd(b[0:5]), rd(b[5:10]), nil
}

// networkInstance decodes a Network Instance: an octet string that is a
// name (clause 8.2.4).  Some control planes send it in DNS label form
// ("\x08internet"): a string that is exactly a sequence of 1..63-octet
// labels is read as one; anything else is taken as text.
func networkInstance(i *ie.IE) (string, *Reject) {
	b := i.Payload
	if len(b) > 255 {
		return "", reject(ie.CauseMandatoryIEIncorrect, i.Type, "Network Instance longer than 255")
	}
	var labels []string
	for rest := b; len(rest) > 0; {
		l := int(rest[0])
		if l == 0 || l > 63 || l+1 > len(rest) {
			labels = nil
			break
		}
		labels = append(labels, string(rest[1:1+l]))
		rest = rest[1+l:]
	}
	s := string(b)
	if labels != nil {
		s = strings.Join(labels, ".")
	}
	for _, c := range s {
		if c < 0x20 || c > 0x7e {
			return "", reject(ie.CauseMandatoryIEIncorrect, i.Type, "Network Instance %q is not printable", s)
		}
	}
	return s, nil
}
