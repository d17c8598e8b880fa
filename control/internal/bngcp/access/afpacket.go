// Package access carries subscribers' control frames between a Linux
// interface and the control plane (direct mode: the control plane on the
// access link itself, as a BNG without a separate user plane, and the
// lab's protocol tests with real DHCP clients).
//
// A packet socket bound to the interface receives every frame; the kernel
// moves a frame's outer VLAN tag into the packet's metadata, and
// PACKET_AUXDATA hands it back with the frame, so the tag is put back in
// place and the control plane sees the frame as it was on the wire.
// Frames are sent with sendmmsg in batches (one system call for what a
// shard built in one round).
package access

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"edgeplane/control/internal/bngcp"
)

// AFPacket is an Access on one interface serving one logical port.
type AFPacket struct {
	fd      int
	ifindex int
	port    string
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Open binds a packet socket to iface for the logical port.
func Open(iface, port string) (*AFPacket, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("access interface %s: %w", iface, err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, fmt.Errorf("access interface %s: packet socket: %w", iface, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("access interface %s: PACKET_AUXDATA: %w", iface, err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 8<<20)
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 8<<20)
	// Wake every 250 ms so a cancelled context is noticed.
	tv := unix.NsecToTimeval(int64(250 * time.Millisecond))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("access interface %s: bind: %w", iface, err)
	}
	return &AFPacket{fd: fd, ifindex: ifi.Index, port: port}, nil
}

// Run implements bngcp.Access.
func (a *AFPacket) Run(ctx context.Context, deliver func(port string, frame []byte)) error {
	buf := make([]byte, 4+65536)
	oob := make([]byte, 256)
	for ctx.Err() == nil {
		n, oobn, _, from, err := unix.Recvmsg(a.fd, buf[4:], oob, 0)
		if err != nil {
			if err == unix.EINTR || err == unix.EAGAIN {
				continue
			}
			if ctx.Err() != nil {
				break
			}
			return fmt.Errorf("access receive: %w", err)
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue // what we sent
		}
		fr := buf[4 : 4+n]
		if tci, tpid, ok := vlanAux(oob[:oobn]); ok && n >= 12 {
			copy(buf[0:12], fr[0:12])
			binary.BigEndian.PutUint16(buf[12:], tpid)
			binary.BigEndian.PutUint16(buf[14:], tci)
			fr = buf[:n+4]
		}
		deliver(a.port, fr)
	}
	return ctx.Err()
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

// Send implements bngcp.Access: one sendmmsg per up to 64 frames.
func (a *AFPacket) Send(out []bngcp.Out) int {
	frames := make([][]byte, 0, len(out))
	for _, o := range out {
		if o.Port == a.port && len(o.Frame) > 0 {
			frames = append(frames, o.Frame)
		}
	}
	sa := unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Ifindex: int32(a.ifindex), Halen: 6}
	sent := 0
	for len(frames) > 0 {
		n := min(len(frames), 64)
		hdrs := make([]mmsghdr, n)
		iovs := make([]unix.Iovec, n)
		for i := 0; i < n; i++ {
			iovs[i].Base = &frames[i][0]
			iovs[i].SetLen(len(frames[i]))
			hdrs[i].hdr.Name = (*byte)(unsafe.Pointer(&sa))
			hdrs[i].hdr.Namelen = uint32(unsafe.Sizeof(sa))
			hdrs[i].hdr.Iov = &iovs[i]
			hdrs[i].hdr.SetIovlen(1)
		}
		r, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(a.fd), uintptr(unsafe.Pointer(&hdrs[0])),
			uintptr(n), 0, 0, 0)
		if errno != 0 {
			// A full queue (ENOBUFS) or an interface gone: what is
			// left of the batch is counted as not sent.
			return sent
		}
		sent += int(r)
		if int(r) < n {
			return sent
		}
		frames = frames[n:]
	}
	return sent
}

type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
	_   [4]byte
}

// Close closes the socket.
func (a *AFPacket) Close() error { return unix.Close(a.fd) }
