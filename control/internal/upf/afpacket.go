package upf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// afPacket is a FramePort on a Linux interface: the data plane's control
// port is a DPDK port (net_af_packet, net_tap) whose other end is this
// interface.  It carries one logical port (one BNG access port per
// edgeplane-dp instance).
//
// The kernel moves a received frame's outer VLAN tag into the packet's
// metadata before a packet socket sees it; PACKET_AUXDATA hands the tag
// back with each frame and it is put back in place, so the redirect sees
// (and the control plane gets) the frame as it was on the wire.
type afPacket struct {
	fd      int
	ifindex int
	port    string
	oob     []byte
}

var errTimeout = errors.New("no frame")

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func openAFPacket(iface, port string) (*afPacket, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("punt interface %s: %w", iface, err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, fmt.Errorf("punt interface %s: packet socket: %w", iface, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("punt interface %s: PACKET_AUXDATA: %w", iface, err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	// A receive wakes up every 250 ms: closing a socket does not end a
	// recvmsg blocked on it, so the reader looks at its context between.
	tv := unix.NsecToTimeval(int64(250 * time.Millisecond))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("punt interface %s: bind: %w", iface, err)
	}
	return &afPacket{fd: fd, ifindex: ifi.Index, port: port, oob: make([]byte, 256)}, nil
}

func (a *afPacket) Recv(buf []byte) (int, string, error) {
	for {
		// Room for a tag put back in front of the payload.
		n, oobn, _, from, err := unix.Recvmsg(a.fd, buf[4:], a.oob, 0)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			if err == unix.EAGAIN {
				return 0, "", errTimeout
			}
			if err == unix.EBADF {
				return 0, "", net.ErrClosed
			}
			return 0, "", err
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue // our own injected frames
		}
		frame := buf[4 : 4+n]
		if tci, tpid, ok := vlanAux(a.oob[:oobn]); ok && n >= 12 {
			copy(buf[0:12], frame[0:12])
			binary.BigEndian.PutUint16(buf[12:], tpid)
			binary.BigEndian.PutUint16(buf[14:], tci)
			return n + 4, a.port, nil
		}
		copy(buf, frame)
		return n, a.port, nil
	}
}

// vlanAux finds the tag the kernel took off (struct tpacket_auxdata).
func vlanAux(oob []byte) (tci, tpid uint16, ok bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, 0, false
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_PACKET || m.Header.Type != unix.PACKET_AUXDATA ||
			len(m.Data) < int(unsafe.Sizeof(unix.TpacketAuxdata{})) {
			continue
		}
		aux := (*unix.TpacketAuxdata)(unsafe.Pointer(&m.Data[0]))
		if aux.Status&unix.TP_STATUS_VLAN_VALID == 0 {
			return 0, 0, false
		}
		tpid = 0x8100
		if aux.Status&unix.TP_STATUS_VLAN_TPID_VALID != 0 {
			tpid = aux.Vlan_tpid
		}
		return aux.Vlan_tci, tpid, true
	}
	return 0, 0, false
}

func (a *afPacket) Send(port string, frame []byte) error {
	if port != a.port {
		return fmt.Errorf("logical port %q is not %q", port, a.port)
	}
	return unix.Sendto(a.fd, frame, 0, &unix.SockaddrLinklayer{Ifindex: a.ifindex, Halen: 6})
}

func (a *afPacket) Close() error {
	if a.fd < 0 {
		return nil
	}
	fd := a.fd
	a.fd = -1
	return unix.Close(fd)
}
