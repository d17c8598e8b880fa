// Package access carries subscribers' control frames between a Linux
// interface and the control plane (direct mode: the control plane on the
// access link itself, as a BNG without a separate user plane, and the
// lab's protocol tests with real DHCP clients), on a batched packet
// socket (control/internal/afpacket: frames in the wire's form, tags
// included; one recvmmsg or sendmmsg for a batch).
package access

import (
	"context"
	"errors"
	"fmt"
	"net"

	"edgeplane/control/internal/afpacket"
	"edgeplane/control/internal/bngcp"
)

// AFPacket is an Access on one interface serving one logical port.
type AFPacket struct {
	s    *afpacket.Socket
	port string
}

// Open binds a packet socket to iface for the logical port.
func Open(iface, port string) (*AFPacket, error) {
	s, err := afpacket.Open(iface, afpacket.Options{})
	if err != nil {
		return nil, fmt.Errorf("access %w", err)
	}
	return &AFPacket{s: s, port: port}, nil
}

// Run implements bngcp.Access.
func (a *AFPacket) Run(ctx context.Context, deliver func(port string, frame []byte)) error {
	b := afpacket.NewBatch(afpacket.Max, 16384)
	for ctx.Err() == nil {
		n, err := a.s.Recv(b)
		if err != nil {
			if err == afpacket.ErrTimeout {
				continue
			}
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				break
			}
			return fmt.Errorf("access receive: %w", err)
		}
		for _, fr := range b.Frames[:n] {
			deliver(a.port, fr)
		}
	}
	return ctx.Err()
}

// Send implements bngcp.Access: what a shard built in one round, in as
// few sendmmsg calls as it takes.  A full queue (ENOBUFS) or an interface
// gone: what is left is counted as not sent.
func (a *AFPacket) Send(out []bngcp.Out) int {
	frames := make([][]byte, 0, len(out))
	for _, o := range out {
		if o.Port == a.port && len(o.Frame) > 0 {
			frames = append(frames, o.Frame)
		}
	}
	n, _ := a.s.Send(frames)
	return n
}

// Close closes the socket.
func (a *AFPacket) Close() error { return a.s.Close() }
