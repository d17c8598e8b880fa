package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// link is the emulator's packet socket on one interface: receive in
// batches (recvmmsg), send in batches (sendmmsg).  The kernel lifts a
// received frame's outer VLAN tag into metadata; PACKET_AUXDATA gives it
// back and it is put back in place, so the state machines see the frame
// as it was on the wire.
type link struct {
	fd      int
	ifindex int
	rx, tx  atomic.Uint64
	txErr   atomic.Uint64
	drops   uint64 // frames the kernel dropped for want of room in our socket
}

// dropped reads the socket's drop count (PACKET_STATISTICS, which
// clears it on every read: the sum is kept).
func (l *link) dropped() uint64 {
	if st, err := unix.GetsockoptTpacketStats(l.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
		l.drops += uint64(st.Drops)
	}
	return l.drops
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func openLink(iface string) (*link, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, fmt.Errorf("packet socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// 32 MiB each way: a host loaded by other work can stall the emulator
	// for a second, and what the network delivered meanwhile must wait in
	// the socket, not be counted as the device's loss. SO_*BUFFORCE (we
	// run as root) passes net.core.rmem_max/wmem_max, which cap SO_*BUF at
	// a few hundred KiB by default.
	for _, o := range [][2]int{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}} {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[0], 32<<20) != nil {
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[1], 32<<20)
		}
	}
	tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &link{fd: fd, ifindex: ifi.Index}, nil
}

const batch = 64

type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
	_   [4]byte
}

// auxdata is struct tpacket_auxdata.
type auxdata struct {
	status   uint32
	len      uint32
	snaplen  uint32
	mac      uint16
	net      uint16
	vlanTCI  uint16
	vlanTPID uint16
}

const (
	tpStatusVLANValid     = 1 << 4
	tpStatusVLANTPIDValid = 1 << 6
)

// recvLoop reads frames until stop, calling fn with each (valid during the
// call only).
func (l *link) recvLoop(stop *atomic.Bool, fn func(b []byte)) {
	const snap = 2048
	bufs := make([][]byte, batch)
	oobs := make([][]byte, batch)
	iovs := make([]unix.Iovec, batch)
	hdrs := make([]mmsghdr, batch)
	names := make([]unix.RawSockaddrLinklayer, batch)
	for i := range bufs {
		bufs[i] = make([]byte, 4+snap)
		oobs[i] = make([]byte, 128)
	}
	for !stop.Load() {
		for i := 0; i < batch; i++ {
			iovs[i].Base = &bufs[i][4]
			iovs[i].SetLen(snap)
			hdrs[i].hdr = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&names[i])), Namelen: uint32(unsafe.Sizeof(names[i])),
				Iov: &iovs[i], Control: &oobs[i][0]}
			hdrs[i].hdr.SetIovlen(1)
			hdrs[i].hdr.SetControllen(len(oobs[i]))
		}
		r, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(l.fd), uintptr(unsafe.Pointer(&hdrs[0])),
			batch, unix.MSG_WAITFORONE, 0, 0)
		if errno != 0 {
			continue
		}
		for i := 0; i < int(r); i++ {
			if names[i].Pkttype == unix.PACKET_OUTGOING {
				continue
			}
			n := int(hdrs[i].n)
			if n > snap {
				n = snap
			}
			b := bufs[i][4 : 4+n]
			if tci, tpid, ok := vlanOf(oobs[i][:hdrs[i].hdr.Controllen]); ok && n >= 12 {
				copy(bufs[i][0:12], b[0:12])
				binary.BigEndian.PutUint16(bufs[i][12:], tpid)
				binary.BigEndian.PutUint16(bufs[i][14:], tci)
				b = bufs[i][:n+4]
			}
			l.rx.Add(1)
			fn(b)
		}
	}
}

func vlanOf(oob []byte) (tci, tpid uint16, ok bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_PACKET || m.Header.Type != unix.PACKET_AUXDATA || len(m.Data) < int(unsafe.Sizeof(auxdata{})) {
			continue
		}
		a := (*auxdata)(unsafe.Pointer(&m.Data[0]))
		if a.status&tpStatusVLANValid == 0 {
			return 0, 0, false
		}
		tpid = 0x8100
		if a.status&tpStatusVLANTPIDValid != 0 {
			tpid = a.vlanTPID
		}
		return a.vlanTCI, tpid, true
	}
	return
}

// send transmits frames in batches.
func (l *link) send(frames [][]byte) {
	sa := unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Ifindex: int32(l.ifindex), Halen: 6}
	retries := 0
	for len(frames) > 0 {
		n := min(len(frames), batch)
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
		r, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(l.fd), uintptr(unsafe.Pointer(&hdrs[0])),
			uintptr(n), 0, 0, 0)
		if errno != 0 {
			if (errno == unix.ENOBUFS || errno == unix.EAGAIN) && retries < 50 {
				retries++
				time.Sleep(200 * time.Microsecond)
				continue
			}
			l.txErr.Add(uint64(n))
			frames = frames[n:]
			continue
		}
		l.tx.Add(uint64(r))
		frames = frames[r:]
	}
}
