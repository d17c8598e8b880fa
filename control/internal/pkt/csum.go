package pkt

import (
	"encoding/binary"
	"fmt"
)

func sum16(b []byte, s uint32) uint32 {
	for len(b) >= 2 {
		s += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// CheckOuter verifies the outer IPv4 header checksum and the outer UDP or
// TCP checksum (with its pseudo-header) of an Ethernet frame, by summing:
// a correct checksum makes the one's complement sum 0xffff. It returns the
// outer destination address bytes.
func CheckOuter(frame []byte) (dst []byte, err error) {
	off := 12
	et := binary.BigEndian.Uint16(frame[off:])
	off += 2
	for et == 0x8100 || et == 0x88a8 {
		et = binary.BigEndian.Uint16(frame[off+2:])
		off += 4
	}
	var pseudo uint32
	var l4 []byte
	var proto byte
	switch et {
	case 0x0800:
		ihl := int(frame[off]&0x0f) * 4
		hdr := frame[off : off+ihl]
		if fold(sum16(hdr, 0)) != 0xffff {
			return nil, fmt.Errorf("IPv4 header checksum %#04x is wrong", binary.BigEndian.Uint16(hdr[10:]))
		}
		tot := int(binary.BigEndian.Uint16(hdr[2:]))
		proto = hdr[9]
		l4 = frame[off+ihl : off+tot]
		pseudo = sum16(hdr[12:20], 0) + uint32(proto) + uint32(len(l4))
		dst = hdr[16:20]
	case 0x86dd:
		hdr := frame[off : off+40]
		plen := int(binary.BigEndian.Uint16(hdr[4:]))
		proto = hdr[6]
		l4 = frame[off+40 : off+40+plen]
		pseudo = sum16(hdr[8:40], 0) + uint32(proto) + uint32(len(l4))
		dst = hdr[24:40]
	default:
		return nil, fmt.Errorf("not IP: ethertype %#04x", et)
	}
	switch proto {
	case 17:
		if binary.BigEndian.Uint16(l4[6:]) == 0 && et == 0x0800 {
			return dst, nil // no checksum
		}
	case 6:
	default:
		return dst, nil
	}
	if fold(sum16(l4, pseudo)) != 0xffff {
		return nil, fmt.Errorf("L4 checksum wrong (proto %d)", proto)
	}
	return dst, nil
}
