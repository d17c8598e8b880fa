// Package udpio moves PFCP datagrams in batches, with the fewest trips
// through the kernel's UDP stack it allows.
//
// At tens of thousands of establishments a second the kernel's UDP path
// is a large part of what a message costs on loopback or a fast NIC:
// each datagram is one routing decision, one skb, one socket-queue
// operation and one wake-up, and on loopback the sender's system call
// runs the receiver's side too (~6 us a request, ~4 us an answer on the
// project's VM).  recvmmsg and sendmmsg (x/net's batch API) share the
// system call; the UDP segmentation offloads share the rest:
//
//	sender   UDP_SEGMENT (GSO, Linux 4.18): datagrams of one size to one
//	         peer go down the stack as one buffer, cut into datagrams at
//	         the device -- in software if it cannot (the datagrams on the
//	         wire are the same either way);
//	receiver UDP_GRO (Linux 5.0): datagrams of one flow and one size that
//	         arrive together (GRO of a NIC, or a GSO buffer on loopback)
//	         come up as one buffer with their size in a control message;
//	         Read cuts them apart again.
//
// This is what QUIC stacks do (quic-go, msquic; "Accelerating UDP packet
// transmission for QUIC", Cloudflare, 2019).  Either offload is used
// where the kernel offers it: a GSO send the kernel refuses (EIO: no
// checksum offload on the route; EINVAL) turns GSO off on the connection
// and the datagrams go out one by one.  What each datagram holds, and the
// order of a peer's datagrams, do not change.
package udpio

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// maxSegments is how many datagrams one GSO buffer carries at most
// (UDP_MAX_SEGMENTS: 64, 128 in newer kernels).  A variable for the test
// of the kernel's refusal.
var maxSegments = 64

const (
	// maxGSOSize bounds a coalesced datagram's size: every datagram of a
	// GSO buffer must fit the route's MTU whole (the kernel refuses the
	// send otherwise), and 1200 octets fit any IPv4 or IPv6 path
	// (IPv6's minimum MTU 1280 less 48 octets of headers, with room).
	// Larger PFCP messages go one per datagram.
	maxGSOSize = 1200
	// maxGSOBytes bounds a GSO buffer (one IP datagram's worth).
	maxGSOBytes = 65000
	// bufSize is each receive buffer: a GRO buffer holds up to 64 KiB.
	bufSize = 1 << 16
)

type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// Conn is a UDP socket read and written in batches.  Read is for one
// goroutine; Write may be called from several.
type Conn struct {
	conn  *net.UDPConn
	bc    batchConn
	noGSO atomic.Bool
	gro   bool
	rx    []ipv4.Message
	// Write's room, reused from call to call under wmu: the GSO
	// buffers' copies of the datagrams (an answer's octets a session,
	// fresh memory each time otherwise), the messages and their iovecs.
	wmu   sync.Mutex
	wbuf  []byte
	wmsgs []ipv4.Message
	wbufs [][]byte
	// Coalesced counts the buffers Read cut apart (GRO at work).
	Coalesced uint64
}

// New wraps c; batch is how many receive buffers one Read fills at most.
// UDP_GRO is asked for on the socket (ignored by kernels without it).
func New(c *net.UDPConn, batch int) *Conn {
	u := &Conn{conn: c, bc: batchConnOf(c)}
	if rc, err := c.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			u.gro = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 1) == nil
		})
	}
	u.rx = make([]ipv4.Message, batch)
	for i := range u.rx {
		u.rx[i].Buffers = [][]byte{make([]byte, bufSize)}
		u.rx[i].OOB = make([]byte, unix.CmsgSpace(4)*2)
	}
	return u
}

func batchConnOf(c *net.UDPConn) batchConn {
	if a := c.LocalAddr().(*net.UDPAddr); a.IP.To4() == nil && !a.IP.IsUnspecified() {
		return ipv6.NewPacketConn(c)
	}
	return ipv4.NewPacketConn(c)
}

// GRO says whether the socket takes coalesced datagrams.
func (u *Conn) GRO() bool { return u.gro }

// Read waits for datagrams and calls fn for each, in arrival order: b is
// valid until fn returns; trunc says the datagram was longer than the
// buffer (MSG_TRUNC: only its beginning is in b).  It returns after one
// recvmmsg, with that call's error.
func (u *Conn) Read(fn func(b []byte, peer netip.AddrPort, trunc bool)) error {
	n, err := u.bc.ReadBatch(u.rx, 0)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		m := &u.rx[i]
		ua, ok := m.Addr.(*net.UDPAddr)
		if !ok {
			continue
		}
		peer := ua.AddrPort()
		peer = netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
		b := m.Buffers[0][:m.N]
		trunc := m.Flags&unix.MSG_TRUNC != 0
		seg := groSize(m.OOB[:m.NN])
		if seg <= 0 || seg >= len(b) || trunc {
			fn(b, peer, trunc)
			continue
		}
		u.Coalesced++
		for len(b) > 0 {
			k := min(seg, len(b))
			fn(b[:k], peer, false)
			b = b[k:]
		}
	}
	return nil
}

// groSize is the datagram size of a coalesced buffer, from its UDP_GRO
// control message (0: none).
func groSize(oob []byte) int {
	for len(oob) > 0 {
		h, data, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			return 0
		}
		if h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO && len(data) >= 2 {
			if len(data) >= 4 {
				return int(binary.NativeEndian.Uint32(data))
			}
			return int(binary.NativeEndian.Uint16(data))
		}
		oob = rest
	}
	return 0
}

// Datagram is one datagram to send.
type Datagram struct {
	Peer netip.AddrPort
	B    []byte
}

// Write sends the datagrams in order.  A run of datagrams of one size to
// one peer (up to 64, at most 1200 octets each) goes as one GSO buffer;
// the rest one per message of a sendmmsg.  It returns the first error
// after which nothing more could be sent.
func (u *Conn) Write(out []Datagram) error {
	if len(out) == 0 {
		return nil
	}
	u.wmu.Lock()
	defer u.wmu.Unlock()
	total := 0
	for _, o := range out {
		total += len(o.B)
	}
	// The GSO buffers are cut from room, which is never grown below:
	// sized for every datagram, it holds them all.  Kept for the next
	// call up to 1 MiB.
	room := u.wbuf[:0]
	if cap(room) < total {
		room = make([]byte, 0, total)
		if total <= 1<<20 {
			u.wbuf = room
		}
	}
	msgs := u.wmsgs[:0]
	bufs := u.wbufs[:0] // every message's iovec
	var last netip.AddrPort
	var addr *net.UDPAddr // shared by a run to the same peer
	gso := !u.noGSO.Load()
	for i := 0; i < len(out); {
		o := out[i]
		if addr == nil || o.Peer != last {
			last, addr = o.Peer, net.UDPAddrFromAddrPort(o.Peer)
		}
		j := i + 1
		if gso && len(o.B) > 0 && len(o.B) <= maxGSOSize {
			for j < len(out) && j-i < maxSegments && out[j].Peer == o.Peer && len(out[j].B) == len(o.B) &&
				(j-i+1)*len(o.B) <= maxGSOBytes {
				j++
			}
		}
		m := ipv4.Message{Addr: addr}
		if j-i == 1 {
			bufs = append(bufs, o.B)
		} else {
			start := len(room)
			for _, d := range out[i:j] {
				room = append(room, d.B...)
			}
			bufs = append(bufs, room[start:len(room):len(room)])
			m.OOB = segmentCmsg(len(o.B))
		}
		msgs = append(msgs, m)
		i = j
	}
	for i := range msgs {
		msgs[i].Buffers = bufs[i : i+1 : i+1]
	}
	// Kept for the next call; nothing of this one is kept past it (the
	// kernel copies the octets): the messages' addresses and buffers
	// are let go when it returns.
	u.wmsgs, u.wbufs = msgs[:0], bufs[:0]
	defer func(m []ipv4.Message, b [][]byte) { clear(m); clear(b) }(msgs, bufs)
	for len(msgs) > 0 {
		n, err := u.bc.WriteBatch(msgs, 0)
		if err != nil && len(msgs[0].OOB) > 0 && (errors.Is(err, unix.EIO) || errors.Is(err, unix.EINVAL)) {
			// The route cannot segment: off for good, and this
			// buffer's datagrams one by one.
			u.noGSO.Store(true)
			seg := int(binary.NativeEndian.Uint16(msgs[0].OOB[unix.CmsgLen(0):]))
			if err := u.writeEach(msgs[0].Addr, msgs[0].Buffers[0], seg); err != nil {
				return err
			}
			msgs = msgs[1:]
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return unix.EAGAIN
		}
		msgs = msgs[n:]
	}
	return nil
}

func (u *Conn) writeEach(to net.Addr, b []byte, seg int) error {
	ms := make([]ipv4.Message, 0, (len(b)+seg-1)/seg)
	for len(b) > 0 {
		k := min(seg, len(b))
		ms = append(ms, ipv4.Message{Buffers: [][]byte{b[:k]}, Addr: to})
		b = b[k:]
	}
	for len(ms) > 0 {
		n, err := u.bc.WriteBatch(ms, 0)
		if err != nil {
			return err
		}
		ms = ms[n:]
	}
	return nil
}

// segmentCmsg is the UDP_SEGMENT control message for datagrams of size.
func segmentCmsg(size int) []byte {
	b := make([]byte, unix.CmsgSpace(2))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(b[unix.CmsgLen(0):], uint16(size))
	return b
}
