package sci

import (
	"encoding/binary"

	"github.com/wmnsk/go-pfcp/ie"
)

// The Broadband Forum's PFCP IEs this control plane sends (TR-459 clause
// 6.6; vendor-specific IEs of enterprise 3561, TS 29.244 clause 8.1.1).
// These few encoders stand in for the user-plane side's package of BBF
// IEs (internal/pfcp/bbf) until that is merged; they encode exactly what
// it decodes.

const bbfEnterprise = 3561

const (
	bbfTypeUPFeatures = 32768
	bbfTypeLogical    = 32769
	bbfTypeOHC        = 32770
	bbfTypeOHR        = 32771
	bbfTypePPPoESID   = 32772
	bbfTypePPPProto   = 32773

	bbfOHREthernet      uint8  = 1 // Ethernet (and its tags)
	bbfOHRPPPoEEthernet uint8  = 2 // PPPoE session header + Ethernet
	bbfOHCTrafficEnd    uint16 = 0x0200
	bbfPPPControl       uint8  = 0x04
	bbfFeaturePPPoE     uint8  = 0x01
	bbfFeatureIPoE      uint8  = 0x02
)

func bbf(t uint16, b []byte) *ie.IE { return ie.NewVendorSpecificIE(t, bbfEnterprise, b) }

func bbfLogicalPort(name string) *ie.IE { return bbf(bbfTypeLogical, []byte(name)) }
func bbfPPPoESessionID(id uint16) *ie.IE {
	return bbf(bbfTypePPPoESID, binary.BigEndian.AppendUint16(nil, id))
}
func bbfOuterHeaderRemoval(desc uint8) *ie.IE { return bbf(bbfTypeOHR, []byte{desc}) }
func bbfOuterHeaderCreationTE() *ie.IE {
	// Description, L2TP tunnel id, L2TP session id: six octets.
	return bbf(bbfTypeOHC, append(binary.BigEndian.AppendUint16(nil, bbfOHCTrafficEnd), 0, 0, 0, 0))
}
func bbfPPPProtocolControl() *ie.IE { return bbf(bbfTypePPPProto, []byte{bbfPPPControl}) }

// bbfUPFeatures reads BBF UP Function Features from an association's IEs.
func bbfUPFeatures(ies []*ie.IE) (uint8, bool) {
	for _, i := range ies {
		if i.IsVendorSpecific() && i.EnterpriseID == bbfEnterprise && i.Type == bbfTypeUPFeatures && len(i.Payload) >= 1 {
			return i.Payload[0], true
		}
	}
	return 0, false
}
