// Package gtpu writes the GTP-U headers (3GPP TS 29.281) of the control
// packet redirect, on both of its ends: the user plane's and the control
// plane's.  The G-PDU header is written directly rather than through
// gopacket's serialiser because it is on the path of every redirected
// frame and is eight fixed octets.
package gtpu

import "encoding/binary"

// HeaderLen is the G-PDU header without optional fields.
const HeaderLen = 8

// AppendGPDU appends a G-PDU (TS 29.281 clause 5.1: version 1, PT 1, no
// optional fields, message type 255) on teid carrying the concatenation
// of parts (an NSH header and a frame, say) to b.
func AppendGPDU(b []byte, teid uint32, parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	b = append(b, 0x30, 255)
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	b = binary.BigEndian.AppendUint32(b, teid)
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}
