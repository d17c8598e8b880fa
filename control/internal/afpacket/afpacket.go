// Package afpacket is a Linux packet socket (packet(7)) on one interface
// that moves Ethernet frames in batches: recvmmsg(2) and sendmmsg(2), one
// system call for up to a batch of frames each way.  It carries control
// frames at control-traffic rates -- the user plane's control packet
// redirect (the data plane's punt port) and the BNG control plane's
// direct access mode -- where a system call and a wake-up per frame were
// what a subscriber's set-up cost (a PPPoE session crosses it 24 times).
// A TPACKET_V3 ring would save the copies too, but at these rates the
// copy is not what costs; the calls are.
//
// The kernel moves a received frame's outer VLAN tag into the packet's
// metadata before a packet socket sees it; PACKET_AUXDATA hands the tag
// back with each frame and it is put back in place, so the caller sees
// the frame as it was on the wire (an S-tag of a QinQ frame included).
//
//	Recv:  recvmmsg(MSG_WAITFORONE): block for the first frame, take what
//	       else is queued, up to len(batch) -> tags restored in place
//	Send:  sendmmsg, Max frames per call
package afpacket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Max is the most frames one system call moves.
const Max = 64

// ErrTimeout: no frame arrived within the wake-up interval (Options.Wake).
var ErrTimeout = errors.New("no frame")

// Options of a socket; zero values take the defaults.
type Options struct {
	RcvBuf, SndBuf int           // socket buffers (default 8 MiB each)
	Wake           time.Duration // a blocked Recv returns ErrTimeout after this (default 250 ms)
}

// Socket is a packet socket bound to one interface.
type Socket struct {
	fd      atomic.Int64 // -1 once closed
	ifindex int
	sa      unix.RawSockaddrLinklayer // where Send sends
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Open binds a packet socket to iface, receiving every protocol.
func Open(iface string, o Options) (*Socket, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", iface, err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, fmt.Errorf("interface %s: packet socket: %w", iface, err)
	}
	fail := func(what string, err error) (*Socket, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("interface %s: %s: %w", iface, what, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
		return fail("PACKET_AUXDATA", err)
	}
	// What we send is not looped back to us (Linux 4.20); older kernels
	// mark it PACKET_OUTGOING, which Recv skips as well.
	unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	if o.RcvBuf == 0 {
		o.RcvBuf = 8 << 20
	}
	if o.SndBuf == 0 {
		o.SndBuf = 8 << 20
	}
	if o.Wake == 0 {
		o.Wake = 250 * time.Millisecond
	}
	// FORCE goes past net.core.rmem_max/wmem_max with CAP_NET_ADMIN
	// (what a BNG function has); without it the sysctl's bound applies.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, o.RcvBuf) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, o.RcvBuf)
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, o.SndBuf) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, o.SndBuf)
	}
	// Closing a socket does not end a recvmmsg blocked on it: the reader
	// wakes up every o.Wake to look at its context.
	tv := unix.NsecToTimeval(o.Wake.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fail("SO_RCVTIMEO", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		return fail("bind", err)
	}
	s := &Socket{ifindex: ifi.Index,
		sa: unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Ifindex: int32(ifi.Index), Halen: 6}}
	s.fd.Store(int64(fd))
	return s, nil
}

// Batch is a caller's set of receive buffers, reused across calls.
// After Recv, Frames[:n] are the frames (valid until the next Recv).
type Batch struct {
	Frames [][]byte
	bufs   [][]byte
	oobs   [][]byte
	names  []unix.RawSockaddrLinklayer
	iovs   []unix.Iovec
	hdrs   []unix.Mmsghdr
}

// auxSpace holds one PACKET_AUXDATA control message.
var auxSpace = unix.CmsgSpace(int(unsafe.Sizeof(unix.TpacketAuxdata{})))

// NewBatch makes room for n frames (at most Max) of up to size octets.
func NewBatch(n, size int) *Batch {
	n = max(1, min(n, Max))
	b := &Batch{Frames: make([][]byte, n), bufs: make([][]byte, n), oobs: make([][]byte, n),
		names: make([]unix.RawSockaddrLinklayer, n), iovs: make([]unix.Iovec, n), hdrs: make([]unix.Mmsghdr, n)}
	for i := range b.bufs {
		// Four octets in front: room for a tag put back in place.
		b.bufs[i] = make([]byte, 4+size)
		b.oobs[i] = make([]byte, auxSpace)
	}
	return b
}

// Recv waits for frames and takes up to len(b.Frames) of them in one
// call.  ErrTimeout: none within the wake-up interval; net.ErrClosed:
// the socket was closed.
func (s *Socket) Recv(b *Batch) (int, error) {
	for {
		fd := s.fd.Load()
		if fd < 0 {
			return 0, net.ErrClosed
		}
		for i := range b.hdrs {
			b.iovs[i].Base = &b.bufs[i][4]
			b.iovs[i].SetLen(len(b.bufs[i]) - 4)
			h := &b.hdrs[i].Hdr
			h.Name = (*byte)(unsafe.Pointer(&b.names[i]))
			h.Namelen = uint32(unsafe.Sizeof(b.names[i]))
			h.Iov = &b.iovs[i]
			h.SetIovlen(1)
			h.Control = &b.oobs[i][0]
			h.SetControllen(len(b.oobs[i]))
			h.Flags = 0
			b.hdrs[i].Len = 0
		}
		r, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.hdrs[0])),
			uintptr(len(b.hdrs)), unix.MSG_WAITFORONE, 0, 0)
		switch errno {
		case 0:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, ErrTimeout
		case unix.EBADF:
			return 0, net.ErrClosed
		default:
			if s.fd.Load() < 0 {
				return 0, net.ErrClosed
			}
			return 0, errno
		}
		n := 0
		for i := 0; i < int(r); i++ {
			if b.names[i].Pkttype == unix.PACKET_OUTGOING {
				continue // what we sent, on a kernel without PACKET_IGNORE_OUTGOING
			}
			l := int(b.hdrs[i].Len)
			buf := b.bufs[i]
			fr := buf[4 : 4+l]
			if tci, tpid, ok := vlanAux(b.oobs[i][:b.hdrs[i].Hdr.Controllen]); ok && l >= 12 {
				copy(buf[0:12], fr[0:12])
				binary.BigEndian.PutUint16(buf[12:], tpid)
				binary.BigEndian.PutUint16(buf[14:], tci)
				fr = buf[:l+4]
			}
			// Keep the buffers in step with the frames: a skipped
			// frame's buffer is swapped behind.
			b.bufs[n], b.bufs[i] = b.bufs[i], b.bufs[n]
			b.oobs[n], b.oobs[i] = b.oobs[i], b.oobs[n]
			b.Frames[n] = fr
			n++
		}
		if n > 0 {
			return n, nil
		}
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

// Send transmits frames, Max per sendmmsg, and returns how many of them
// are done (empty frames are skipped and count as done); the error is the
// one that stopped it (a full queue: ENOBUFS).
func (s *Socket) Send(frames [][]byte) (int, error) {
	var hdrs [Max]unix.Mmsghdr
	var iovs [Max]unix.Iovec
	var pos [Max]int // the index in frames of each message
	done := 0
	for done < len(frames) {
		k, end := 0, min(len(frames), done+Max)
		for i := done; i < end; i++ {
			f := frames[i]
			if len(f) == 0 {
				continue
			}
			iovs[k].Base = &f[0]
			iovs[k].SetLen(len(f))
			h := &hdrs[k].Hdr
			h.Name = (*byte)(unsafe.Pointer(&s.sa))
			h.Namelen = uint32(unsafe.Sizeof(s.sa))
			h.Iov = &iovs[k]
			h.SetIovlen(1)
			pos[k] = i
			k++
		}
		if k == 0 {
			done = end
			continue
		}
		fd := s.fd.Load()
		if fd < 0 {
			return pos[0], net.ErrClosed
		}
		r, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&hdrs[0])),
			uintptr(k), 0, 0, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return pos[0], errno
		case int(r) < k: // the queue filled part way
			return pos[r], unix.ENOBUFS
		}
		done = end
	}
	return done, nil
}

// Close closes the socket; a Recv in progress returns net.ErrClosed at
// its next wake-up at the latest.
func (s *Socket) Close() error {
	fd := s.fd.Swap(-1)
	if fd < 0 {
		return nil
	}
	return unix.Close(int(fd))
}
