package cpsim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"edgeplane/control/internal/pfcp/udpio"
)

// CP is one control plane: a PFCP endpoint with an association to one
// user-plane function.  Its requests are matched to answers by sequence
// number, so many can be in flight (a benchmark sends thousands).
type CP struct {
	conn     *net.UDPConn
	up       netip.AddrPort
	node     string
	addr     netip.Addr
	recovery time.Time
	seq      atomic.Uint32

	mu       sync.Mutex
	pending  map[uint32]chan message.Message
	reports  []*message.SessionReportRequest
	hbFromUP atomic.Uint64
	// AnswerHeartbeats false makes the control plane silent (a lost CP).
	AnswerHeartbeats atomic.Bool
	// ReportCause is the cause of our Session Report Responses (default
	// Request accepted).
	ReportCause atomic.Uint32
	// Trace, when set, sees every datagram both ways (captures).
	Trace func(out bool, b []byte)
	// Raw, when set, receives every datagram that is not a request of the
	// function's, undecoded (a benchmark's answers: decoding each with
	// go-pfcp would cost the client more than the function spends), those
	// of one recvmmsg together (a channel operation, and a wake-up of the
	// reader, per answer cost the client more than the kernel's receive).
	Raw chan [][]byte
	io  *udpio.Conn
}

// New binds a control plane at local (port 0: any) towards the function
// at up.
func New(local, up netip.AddrPort, node string) (*CP, error) {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(local))
	if err != nil {
		return nil, err
	}
	c.SetReadBuffer(16 << 20)
	c.SetWriteBuffer(16 << 20)
	if node == "" {
		node = local.Addr().String()
	}
	cp := &CP{conn: c, up: up, node: node, addr: local.Addr(), recovery: time.Now().Truncate(time.Second),
		pending: map[uint32]chan message.Message{}}
	cp.io = udpio.New(c, 64)
	cp.AnswerHeartbeats.Store(true)
	cp.ReportCause.Store(uint32(ie.CauseRequestAccepted))
	go cp.read()
	return cp, nil
}

// Close releases the socket.
func (c *CP) Close() error { return c.conn.Close() }

// Addr is the control plane's PFCP address.
func (c *CP) Addr() netip.AddrPort { return c.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Restart gives the control plane a new Recovery Time Stamp (as after a
// restart).
func (c *CP) Restart() { c.recovery = time.Now().Add(time.Second).Truncate(time.Second) }

// HeartbeatsFromUP is how many Heartbeat Requests the function sent us.
func (c *CP) HeartbeatsFromUP() uint64 { return c.hbFromUP.Load() }

// Reports returns the Session Report Requests received so far.
func (c *CP) Reports() []*message.SessionReportRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*message.SessionReportRequest(nil), c.reports...)
}

func (c *CP) read() {
	for {
		var raw [][]byte
		err := c.io.Read(func(d []byte, peer netip.AddrPort, trunc bool) {
			b := append([]byte(nil), d...)
			if c.Trace != nil {
				c.Trace(false, b)
			}
			if c.Raw != nil && len(b) > 1 && b[1] != message.MsgTypeHeartbeatRequest &&
				b[1] != message.MsgTypeSessionReportRequest && b[1] != message.MsgTypeAssociationSetupRequest {
				raw = append(raw, b)
				return
			}
			c.handle(b, peer)
		})
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if len(raw) > 0 {
			c.Raw <- raw
		}
	}
}

func (c *CP) handle(b []byte, peer netip.AddrPort) {
	m, err := message.Parse(b)
	if err != nil {
		return
	}
	switch r := m.(type) {
	case *message.HeartbeatRequest:
		c.hbFromUP.Add(1)
		if c.AnswerHeartbeats.Load() {
			c.write(peer, message.NewHeartbeatResponse(r.Sequence(), ie.NewRecoveryTimeStamp(c.recovery)))
		}
		return
	case *message.SessionReportRequest:
		c.mu.Lock()
		c.reports = append(c.reports, r)
		c.mu.Unlock()
		c.write(peer, message.NewSessionReportResponse(0, 0, 0, r.Sequence(), 0,
			ie.NewCause(uint8(c.ReportCause.Load()))))
		return
	case *message.AssociationSetupRequest:
		c.write(peer, message.NewAssociationSetupResponse(r.Sequence(), ie.NewNodeIDHeuristic(c.node),
			ie.NewCause(ie.CauseRequestAccepted), ie.NewRecoveryTimeStamp(c.recovery)))
		return
	}
	c.mu.Lock()
	ch := c.pending[m.Sequence()]
	delete(c.pending, m.Sequence())
	c.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}

// WriteBatch sends many encoded requests to the function with as few
// trips through the kernel as it allows (sendmmsg, UDP GSO: package
// udpio).
func (c *CP) WriteBatch(bs [][]byte) error {
	out := make([]udpio.Datagram, len(bs))
	for i, b := range bs {
		if c.Trace != nil {
			c.Trace(true, b)
		}
		out[i] = udpio.Datagram{Peer: c.up, B: b}
	}
	return c.io.Write(out)
}

func (c *CP) write(to netip.AddrPort, m message.Message) error {
	b := make([]byte, m.MarshalLen())
	if err := m.MarshalTo(b); err != nil {
		return err
	}
	return c.WriteRaw(to, b)
}

// WriteRaw sends octets to the function (hostile tests).
func (c *CP) WriteRaw(to netip.AddrPort, b []byte) error {
	if !to.IsValid() {
		to = c.up
	}
	if c.Trace != nil {
		c.Trace(true, b)
	}
	_, err := c.conn.WriteToUDPAddrPort(b, to)
	return err
}

// NextSeq is a fresh sequence number.
func (c *CP) NextSeq() uint32 { return c.seq.Add(1) & 0xffffff }

// Expect returns the channel the answer with this sequence number will
// arrive on (for requests sent with WriteRaw).
func (c *CP) Expect(seq uint32) <-chan message.Message {
	ch := make(chan message.Message, 1)
	c.mu.Lock()
	c.pending[seq] = ch
	c.mu.Unlock()
	return ch
}

// AsyncTo sends a request whose answer goes to out (shared by many
// requests: no goroutine or channel each).
func (c *CP) AsyncTo(m message.Message, out chan message.Message) error {
	c.mu.Lock()
	c.pending[m.Sequence()] = out
	c.mu.Unlock()
	if err := c.write(c.up, m); err != nil {
		c.forget(m.Sequence())
		return err
	}
	return nil
}

// Async sends a request (its sequence number already set) and returns the
// channel its answer arrives on.
func (c *CP) Async(m message.Message) (<-chan message.Message, error) {
	ch := make(chan message.Message, 1)
	c.mu.Lock()
	c.pending[m.Sequence()] = ch
	c.mu.Unlock()
	if err := c.write(c.up, m); err != nil {
		c.mu.Lock()
		delete(c.pending, m.Sequence())
		c.mu.Unlock()
		return nil, err
	}
	return ch, nil
}

// Call sends a request and waits for its answer, retransmitting every
// t1 (TS 29.244 clause 6.4) up to n1 times.
func (c *CP) Call(ctx context.Context, m message.Message) (message.Message, error) {
	ch, err := c.Async(m)
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(3 * time.Second)
	defer t.Stop()
	for tries := 0; ; tries++ {
		select {
		case r := <-ch:
			return r, nil
		case <-ctx.Done():
			c.forget(m.Sequence())
			return nil, ctx.Err()
		case <-t.C:
			if tries == 3 {
				c.forget(m.Sequence())
				return nil, fmt.Errorf("no answer to %s seq %d", m.MessageTypeName(), m.Sequence())
			}
			c.write(c.up, m)
			t.Reset(3 * time.Second)
		}
	}
}

func (c *CP) forget(seq uint32) {
	c.mu.Lock()
	delete(c.pending, seq)
	c.mu.Unlock()
}

// Associate sets up the association.
func (c *CP) Associate(ctx context.Context, extra ...*ie.IE) (*message.AssociationSetupResponse, error) {
	m := message.NewAssociationSetupRequest(c.NextSeq(), append([]*ie.IE{ie.NewNodeIDHeuristic(c.node),
		ie.NewRecoveryTimeStamp(c.recovery), ie.NewCPFunctionFeatures(0)}, extra...)...)
	r, err := c.Call(ctx, m)
	if err != nil {
		return nil, err
	}
	a, ok := r.(*message.AssociationSetupResponse)
	if !ok {
		return nil, fmt.Errorf("answer is %s", r.MessageTypeName())
	}
	return a, nil
}

// Release releases the association.
func (c *CP) Release(ctx context.Context) (*message.AssociationReleaseResponse, error) {
	r, err := c.Call(ctx, message.NewAssociationReleaseRequest(c.NextSeq(), ie.NewNodeIDHeuristic(c.node)))
	if err != nil {
		return nil, err
	}
	a, ok := r.(*message.AssociationReleaseResponse)
	if !ok {
		return nil, fmt.Errorf("answer is %s", r.MessageTypeName())
	}
	return a, nil
}

// Heartbeat sends a Heartbeat Request.
func (c *CP) Heartbeat(ctx context.Context) (*message.HeartbeatResponse, error) {
	r, err := c.Call(ctx, message.NewHeartbeatRequest(c.NextSeq(), ie.NewRecoveryTimeStamp(c.recovery), nil))
	if err != nil {
		return nil, err
	}
	h, ok := r.(*message.HeartbeatResponse)
	if !ok {
		return nil, fmt.Errorf("answer is %s", r.MessageTypeName())
	}
	return h, nil
}

// EstablishMsg is a Session Establishment Request for cpSEID.
func (c *CP) EstablishMsg(cpSEID uint64, body []*ie.IE) *message.SessionEstablishmentRequest {
	ies := append([]*ie.IE{ie.NewNodeIDHeuristic(c.node), ie.NewFSEID(cpSEID, c.addr.AsSlice(), nil)}, body...)
	return message.NewSessionEstablishmentRequest(0, 0, 0, c.NextSeq(), 0, ies...)
}

// Establish sends an establishment and waits for the answer.
func (c *CP) Establish(ctx context.Context, cpSEID uint64, body []*ie.IE) (*message.SessionEstablishmentResponse, error) {
	r, err := c.Call(ctx, c.EstablishMsg(cpSEID, body))
	if err != nil {
		return nil, err
	}
	e, ok := r.(*message.SessionEstablishmentResponse)
	if !ok {
		return nil, fmt.Errorf("answer is %s", r.MessageTypeName())
	}
	return e, nil
}

// Modify sends a modification of the function's session upSEID.
func (c *CP) Modify(ctx context.Context, upSEID uint64, body []*ie.IE) (*message.SessionModificationResponse, error) {
	r, err := c.Call(ctx, message.NewSessionModificationRequest(0, 0, upSEID, c.NextSeq(), 0, body...))
	if err != nil {
		return nil, err
	}
	e, ok := r.(*message.SessionModificationResponse)
	if !ok {
		return nil, fmt.Errorf("answer is %s", r.MessageTypeName())
	}
	return e, nil
}

// Delete deletes the function's session upSEID.
func (c *CP) Delete(ctx context.Context, upSEID uint64) (*message.SessionDeletionResponse, error) {
	r, err := c.Call(ctx, message.NewSessionDeletionRequest(0, 0, upSEID, c.NextSeq(), 0))
	if err != nil {
		return nil, err
	}
	e, ok := r.(*message.SessionDeletionResponse)
	if !ok {
		return nil, fmt.Errorf("answer is %s", r.MessageTypeName())
	}
	return e, nil
}

// Cause reads a message's cause (0 if none).
func Cause(m message.Message) uint8 {
	var i *ie.IE
	switch r := m.(type) {
	case *message.SessionEstablishmentResponse:
		i = r.Cause
	case *message.SessionModificationResponse:
		i = r.Cause
	case *message.SessionDeletionResponse:
		i = r.Cause
	case *message.AssociationSetupResponse:
		i = r.Cause
	case *message.AssociationReleaseResponse:
		i = r.Cause
	case *message.AssociationUpdateResponse:
		i = r.Cause
	}
	if i == nil {
		return 0
	}
	v, _ := i.Cause()
	return v
}

// UPSEID reads the function's F-SEID from an establishment's answer.
func UPSEID(r *message.SessionEstablishmentResponse) (uint64, error) {
	if r.UPFSEID == nil {
		return 0, errors.New("no UP F-SEID")
	}
	f, err := r.UPFSEID.FSEID()
	if err != nil {
		return 0, err
	}
	return f.SEID, nil
}
