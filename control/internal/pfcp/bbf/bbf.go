// Package bbf encodes and decodes the Broadband Forum's PFCP information
// elements of TR-459 ("Control and User Plane Separation for a
// disaggregated BNG", Issue 1, clause 6.6) on top of go-pfcp's IE type.
//
// They are vendor-specific IEs in the sense of 3GPP TS 29.244 clause 8.1.1:
// the type has bit 8 of octet 1 set, and an Enterprise ID (3561, the
// Broadband Forum's IANA private enterprise number) follows the length.
// go-pfcp carries such IEs (ie.NewVendorSpecificIE) but knows none of
// their contents, so their layouts are written here, one function each,
// and tested against byte strings Wireshark's PFCP dissector (tshark)
// decodes to the expected pfcp.bbf.* fields.
//
//	type   IE                          content (after the Enterprise ID)
//	32768  BBF UP Function Features    1 octet of flags + 3 spare octets
//	32769  Logical Port                logical-port-id, an octet string
//	32770  BBF Outer Header Creation   description (2 octets), L2TP tunnel
//	                                   id (2), L2TP session id (2)
//	32771  BBF Outer Header Removal    description (1 octet)
//	32772  PPPoE Session ID            2 octets
//	32773  PPP Protocol                flags (1), protocol (2, when S)
//	32774  Verification Timers         interval s (2), count (1)
//	32775  PPP LCP Magic Number        tx (4), rx (4)
//	32776  MTU                         2 octets
//	32777  L2TP Tunnel Endpoint        (L2TP: not supported here)
//	32778  L2TP Session ID
//	32779  L2TP Type
//	32780  PPP LCP Connectivity        grouped: Verification Timers, Magic
//	32781  L2TP Tunnel                 grouped (L2TP)
package bbf

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/wmnsk/go-pfcp/ie"

	"edgeplane/control/internal/pfcp/wire"
)

// EnterpriseID is the Broadband Forum's IANA private enterprise number.
const EnterpriseID uint16 = 3561

// IE types (TR-459 clause 6.6).
const (
	UPFunctionFeatures  uint16 = 32768
	LogicalPort         uint16 = 32769
	OuterHeaderCreation uint16 = 32770
	OuterHeaderRemoval  uint16 = 32771
	PPPoESessionID      uint16 = 32772
	PPPProtocol         uint16 = 32773
	VerificationTimers  uint16 = 32774
	PPPLCPMagicNumber   uint16 = 32775
	MTU                 uint16 = 32776
	L2TPTunnelEndpoint  uint16 = 32777
	L2TPSessionID       uint16 = 32778
	L2TPType            uint16 = 32779
	PPPLCPConnectivity  uint16 = 32780
	L2TPTunnel          uint16 = 32781
)

// Name is the IE's name as TR-459 gives it ("" for another type).
func Name(t uint16) string {
	switch t {
	case UPFunctionFeatures:
		return "BBF UP Function Features"
	case LogicalPort:
		return "Logical Port"
	case OuterHeaderCreation:
		return "BBF Outer Header Creation"
	case OuterHeaderRemoval:
		return "BBF Outer Header Removal"
	case PPPoESessionID:
		return "PPPoE Session ID"
	case PPPProtocol:
		return "PPP Protocol"
	case VerificationTimers:
		return "Verification Timers"
	case PPPLCPMagicNumber:
		return "PPP LCP Magic Number"
	case MTU:
		return "MTU"
	case L2TPTunnelEndpoint:
		return "L2TP Tunnel Endpoint"
	case L2TPSessionID:
		return "L2TP Session ID"
	case L2TPType:
		return "L2TP Type"
	case PPPLCPConnectivity:
		return "PPP LCP Connectivity"
	case L2TPTunnel:
		return "L2TP Tunnel"
	}
	return ""
}

// Is reports whether i is the BBF IE of type t.
func Is(i *ie.IE, t uint16) bool {
	return i != nil && i.Type == t && i.EnterpriseID == EnterpriseID && i.IsVendorSpecific()
}

// IsBBF reports whether i is any Broadband Forum IE.
func IsBBF(i *ie.IE) bool {
	return i != nil && i.IsVendorSpecific() && i.EnterpriseID == EnterpriseID
}

// ErrLength: the IE's content is shorter or longer than its type allows.
var ErrLength = errors.New("invalid length")

// LengthError names the IE whose content had the wrong length.
type LengthError struct {
	Type      uint16
	Got, Want int
}

func (e *LengthError) Error() string {
	return fmt.Sprintf("%s (%d): %d octets of content, want %d", Name(e.Type), e.Type, e.Got, e.Want)
}

func (e *LengthError) Unwrap() error { return ErrLength }

func content(i *ie.IE, t uint16, min, max int) ([]byte, error) {
	if !Is(i, t) {
		return nil, fmt.Errorf("not a %s IE (type %d, enterprise %d)", Name(t), i.Type, i.EnterpriseID)
	}
	if len(i.Payload) < min || (max >= 0 && len(i.Payload) > max) {
		return nil, &LengthError{Type: t, Got: len(i.Payload), Want: min}
	}
	return i.Payload, nil
}

func vendor(t uint16, b []byte) *ie.IE { return ie.NewVendorSpecificIE(t, EnterpriseID, b) }

// --- 6.6.1 BBF UP Function Features ---------------------------------------

// UP function feature flags (octet 7).
const (
	FeaturePPPoE             uint8 = 0x01 // PPPoE supported
	FeatureIPoE              uint8 = 0x02 // IPoE supported
	FeatureLAC               uint8 = 0x04 // L2TP access concentrator
	FeatureLNS               uint8 = 0x08 // L2TP network server
	FeatureLCPKeepaliveOffld uint8 = 0x10 // PPP LCP echo handled by the UP
)

// NewUPFunctionFeatures encodes the flags and the three spare octets
// TR-459 reserves after them.
func NewUPFunctionFeatures(flags uint8) *ie.IE {
	return vendor(UPFunctionFeatures, []byte{flags, 0, 0, 0})
}

// ParseUPFunctionFeatures returns the flags octet.
func ParseUPFunctionFeatures(i *ie.IE) (uint8, error) {
	b, err := content(i, UPFunctionFeatures, 1, -1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// --- 6.6.2 Logical Port ------------------------------------------------------

// MaxLogicalPortLen bounds a logical-port-id (TR-459 gives it no limit; a
// port name longer than this is refused rather than stored).
const MaxLogicalPortLen = 255

// NewLogicalPort encodes a logical-port-id (an octet string; ours are
// printable port names, which tshark shows as pfcp.bbf.logical_port_id_str).
func NewLogicalPort(id string) *ie.IE { return vendor(LogicalPort, []byte(id)) }

// ParseLogicalPort returns the logical-port-id.
func ParseLogicalPort(i *ie.IE) (string, error) {
	b, err := content(i, LogicalPort, 1, MaxLogicalPortLen)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// --- 6.6.3 BBF Outer Header Creation ----------------------------------------

// Outer Header Creation descriptions (octets 7-8, as Wireshark numbers them).
const (
	OHCCPRNSH          uint16 = 0x0100 // control packet redirect with an NSH header
	OHCTrafficEndpoint uint16 = 0x0200 // the traffic endpoint's access encapsulation
	OHCL2TP            uint16 = 0x0300
	OHCPPP             uint16 = 0x0400
)

// OHC is a BBF Outer Header Creation.
type OHC struct {
	Description uint16
	TunnelID    uint16 // L2TP only
	SessionID   uint16 // L2TP only
}

// NewOuterHeaderCreation encodes all six octets (the L2TP ids are zero
// for the other descriptions).
func NewOuterHeaderCreation(o OHC) *ie.IE {
	b := make([]byte, 6)
	binary.BigEndian.PutUint16(b[0:], o.Description)
	binary.BigEndian.PutUint16(b[2:], o.TunnelID)
	binary.BigEndian.PutUint16(b[4:], o.SessionID)
	return vendor(OuterHeaderCreation, b)
}

// ParseOuterHeaderCreation decodes the description and, when present, the
// L2TP ids.
func ParseOuterHeaderCreation(i *ie.IE) (OHC, error) {
	b, err := content(i, OuterHeaderCreation, 2, -1)
	if err != nil {
		return OHC{}, err
	}
	o := OHC{Description: binary.BigEndian.Uint16(b)}
	if len(b) >= 6 {
		o.TunnelID = binary.BigEndian.Uint16(b[2:])
		o.SessionID = binary.BigEndian.Uint16(b[4:])
	}
	return o, nil
}

// --- 6.6.4 BBF Outer Header Removal -----------------------------------------

// Outer Header Removal descriptions.
const (
	OHREthernet       uint8 = 1 // Ethernet (and its tags)
	OHRPPPoEEthernet  uint8 = 2 // PPPoE session header + Ethernet
	OHRPPPPPPoEEthern uint8 = 3 // PPP + PPPoE + Ethernet
	OHRL2TP           uint8 = 4
	OHRPPPL2TP        uint8 = 5
)

// NewOuterHeaderRemoval encodes a description.
func NewOuterHeaderRemoval(desc uint8) *ie.IE { return vendor(OuterHeaderRemoval, []byte{desc}) }

// ParseOuterHeaderRemoval returns the description.
func ParseOuterHeaderRemoval(i *ie.IE) (uint8, error) {
	b, err := content(i, OuterHeaderRemoval, 1, -1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// --- 6.6.5 PPPoE Session ID -------------------------------------------------

// NewPPPoESessionID encodes a PPPoE session id (RFC 2516).
func NewPPPoESessionID(id uint16) *ie.IE {
	return vendor(PPPoESessionID, binary.BigEndian.AppendUint16(nil, id))
}

// ParsePPPoESessionID returns the session id.
func ParsePPPoESessionID(i *ie.IE) (uint16, error) {
	b, err := content(i, PPPoESessionID, 2, 2)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint16(b), nil
}

// --- 6.6.6 PPP Protocol -----------------------------------------------------

// PPP Protocol flags.
const (
	PPPSpecific uint8 = 0x01 // the protocol field is present
	PPPData     uint8 = 0x02 // PPP data protocols (IPv4 0x0021, IPv6 0x0057)
	PPPControl  uint8 = 0x04 // PPP control protocols (LCP, NCPs, authentication)
)

// PPPProto is a PPP Protocol IE.
type PPPProto struct {
	Flags    uint8
	Protocol uint16 // when Flags has PPPSpecific
}

// NewPPPProtocol encodes the flags and, when specific, the protocol.
func NewPPPProtocol(p PPPProto) *ie.IE {
	b := []byte{p.Flags}
	if p.Flags&PPPSpecific != 0 {
		b = binary.BigEndian.AppendUint16(b, p.Protocol)
	}
	return vendor(PPPProtocol, b)
}

// ParsePPPProtocol decodes the flags and the protocol.
func ParsePPPProtocol(i *ie.IE) (PPPProto, error) {
	b, err := content(i, PPPProtocol, 1, -1)
	if err != nil {
		return PPPProto{}, err
	}
	p := PPPProto{Flags: b[0]}
	if p.Flags&PPPSpecific != 0 {
		if len(b) < 3 {
			return PPPProto{}, &LengthError{Type: PPPProtocol, Got: len(b), Want: 3}
		}
		p.Protocol = binary.BigEndian.Uint16(b[1:])
	}
	return p, nil
}

// Matches reports whether PPP protocol proto is selected by p.  Data is
// IPv4 and IPv6; control is every protocol of RFC 1661's ranges 0x8000-
// 0xbfff (NCPs) and 0xc000-0xffff (LCP, authentication).
func (p PPPProto) Matches(proto uint16) bool {
	if p.Flags&PPPSpecific != 0 {
		return proto == p.Protocol
	}
	if p.Flags&PPPControl != 0 && proto >= 0x8000 {
		return true
	}
	if p.Flags&PPPData != 0 && proto < 0x8000 {
		return true
	}
	return false
}

// --- 6.6.7 Verification Timers ----------------------------------------------

// VerifTimers is the LCP echo schedule of a session (LCP keepalive).
type VerifTimers struct {
	Interval uint16 // seconds between echo requests
	Count    uint8  // unanswered echoes before the session is considered down
}

// NewVerificationTimers encodes the interval and the count.
func NewVerificationTimers(v VerifTimers) *ie.IE {
	b := binary.BigEndian.AppendUint16(nil, v.Interval)
	return vendor(VerificationTimers, append(b, v.Count))
}

// ParseVerificationTimers decodes the interval and the count.
func ParseVerificationTimers(i *ie.IE) (VerifTimers, error) {
	b, err := content(i, VerificationTimers, 3, -1)
	if err != nil {
		return VerifTimers{}, err
	}
	return VerifTimers{Interval: binary.BigEndian.Uint16(b), Count: b[2]}, nil
}

// --- 6.6.8 PPP LCP Magic Number ---------------------------------------------

// Magic is the pair of LCP magic numbers (RFC 1661 section 6.4).
type Magic struct{ Tx, Rx uint32 }

// NewPPPLCPMagicNumber encodes both magic numbers.
func NewPPPLCPMagicNumber(m Magic) *ie.IE {
	b := binary.BigEndian.AppendUint32(nil, m.Tx)
	return vendor(PPPLCPMagicNumber, binary.BigEndian.AppendUint32(b, m.Rx))
}

// ParsePPPLCPMagicNumber decodes both magic numbers.
func ParsePPPLCPMagicNumber(i *ie.IE) (Magic, error) {
	b, err := content(i, PPPLCPMagicNumber, 8, -1)
	if err != nil {
		return Magic{}, err
	}
	return Magic{Tx: binary.BigEndian.Uint32(b), Rx: binary.BigEndian.Uint32(b[4:])}, nil
}

// --- 6.6.9 MTU --------------------------------------------------------------

// NewMTU encodes an MTU.
func NewMTU(mtu uint16) *ie.IE { return vendor(MTU, binary.BigEndian.AppendUint16(nil, mtu)) }

// ParseMTU returns the MTU.
func ParseMTU(i *ie.IE) (uint16, error) {
	b, err := content(i, MTU, 2, 2)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint16(b), nil
}

// --- grouped: PPP LCP Connectivity ------------------------------------------

// NewPPPLCPConnectivity groups a session's LCP keepalive parameters.
func NewPPPLCPConnectivity(children ...*ie.IE) *ie.IE {
	return ie.NewVendorSpecificGroupedIE(PPPLCPConnectivity, EnterpriseID, children...)
}

// Children decodes a grouped BBF IE's members.  go-pfcp decides whether an
// IE is grouped by its type alone, for every enterprise; the BBF grouped
// types are decoded here, for this enterprise only, rather than registered
// globally (another vendor's 32780 need not be grouped).
func Children(i *ie.IE) ([]*ie.IE, error) {
	if !IsBBF(i) || (i.Type != PPPLCPConnectivity && i.Type != L2TPTunnel) {
		return nil, fmt.Errorf("type %d is not a grouped BBF IE", i.Type)
	}
	if err := wire.CheckIEs(i.Payload); err != nil {
		return nil, err
	}
	return ie.ParseMultiIEs(i.Payload)
}
