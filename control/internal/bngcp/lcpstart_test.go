package bngcp

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"edgeplane/control/internal/bngcp/aaa"
	"edgeplane/control/internal/bngcp/frame"
	"edgeplane/control/internal/bngcp/ppp"
	"edgeplane/control/internal/bngcp/pppoe"
)

// recorder is an access side that keeps what the control plane sends.
type recorder struct{ out [][]byte }

func (r *recorder) Run(ctx context.Context, _ func(string, []byte)) error { <-ctx.Done(); return nil }
func (r *recorder) Send(out []Out) int {
	for _, o := range out {
		r.out = append(r.out, append([]byte(nil), o.Frame...))
	}
	return len(out)
}

// sent is one frame the control plane sent: a discovery code, or the PPP
// protocol and code of a session frame.
type sent struct {
	disc      uint8
	proto     uint16
	code      uint8
	discovery *pppoe.Discovery
}

func (r *recorder) take(t *testing.T) []sent {
	t.Helper()
	var l []sent
	for _, b := range r.out {
		h, p, err := frame.Parse(b)
		if err != nil {
			t.Fatalf("we sent an unparsable frame: %v", err)
		}
		switch h.EtherType {
		case frame.TypePPPoED:
			d, err := pppoe.ParseDiscovery(p)
			if err != nil {
				t.Fatal(err)
			}
			l = append(l, sent{disc: d.Code, discovery: d})
		case frame.TypePPPoES:
			_, proto, info, err := pppoe.ParseSession(p)
			if err != nil || len(info) < 1 {
				t.Fatalf("session frame: %v", err)
			}
			l = append(l, sent{proto: proto, code: info[0]})
		}
	}
	r.out = nil
	return l
}

// pppoeRig is one shard driven synchronously with a clock of its own.
type pppoeRig struct {
	t    *testing.T
	srv  *Server
	sh   *shard
	port *portState
	rec  *recorder
	now  time.Time
	sub  frame.MAC
	line frame.Line
}

func newPPPoERig(t *testing.T) *pppoeRig {
	cfg, err := ParseConfig([]byte(fuzzConfig + "pppoe: {auth: [pap], restart_timer: 3s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	users := &aaa.Local{}
	if err := users.Read(strings.NewReader("user0 secret profile=p10 pool=v4\n"), "test"); err != nil {
		t.Fatal(err)
	}
	r := &pppoeRig{t: t, rec: &recorder{}, now: time.Unix(1_800_000_000, 0),
		sub: frame.MAC{2, 0xee, 0, 0, 0, 1}, line: frame.Line{STag: 100, CTag: 1}}
	r.srv, err = New(cfg, Deps{Access: r.rec, Auth: users, Now: func() time.Time { return r.now }})
	if err != nil {
		t.Fatal(err)
	}
	r.sh, r.port = r.srv.shards[0], r.srv.ports["access"]
	return r
}

// in hands a frame from the subscriber to the shard and runs what follows.
func (r *pppoeRig) in(b []byte) {
	r.t.Helper()
	h, _, err := frame.Parse(b)
	if err != nil {
		r.t.Fatal(err)
	}
	r.sh.handle(event{port: r.port, hdr: h, data: b})
	r.settle()
}

func (r *pppoeRig) settle() {
	for len(r.sh.in) > 0 {
		r.sh.handle(<-r.sh.in)
	}
	r.sh.fire()
	r.sh.flush()
}

func (r *pppoeRig) discovery(code uint8, tags ...pppoe.Tag) {
	dst := frame.Broadcast
	if code != pppoe.CodePADI {
		dst = r.port.mac
	}
	b := frame.Append(nil, dst, r.sub, r.line, frame.TypePPPoED)
	b, err := pppoe.AppendDiscovery(b, code, 0, tags...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.in(b)
}

func (r *pppoeRig) lcp(sid uint16, pk ppp.Packet) {
	b := frame.Append(nil, r.port.mac, r.sub, r.line, frame.TypePPPoES)
	off := len(b)
	b = pk.Append(pppoe.AppendSession(b, sid, ppp.ProtoLCP))
	pppoe.FixSessionLength(b, off)
	r.in(b)
}

// session runs discovery to the PADS and returns what was sent with it
// and the session id.
func (r *pppoeRig) session() ([]sent, uint16) {
	r.t.Helper()
	hu := pppoe.Tag{Type: pppoe.TagHostUniq, Value: []byte{0, 0, 0, 1}}
	svc := pppoe.Tag{Type: pppoe.TagServiceName}
	r.discovery(pppoe.CodePADI, svc, hu)
	got := r.rec.take(r.t)
	if len(got) != 1 || got[0].disc != pppoe.CodePADO {
		r.t.Fatalf("answer to PADI: %+v", got)
	}
	var cookie []byte
	for _, tg := range got[0].discovery.Tags {
		if tg.Type == pppoe.TagACCookie {
			cookie = tg.Value
		}
	}
	r.discovery(pppoe.CodePADR, svc, hu, pppoe.Tag{Type: pppoe.TagACCookie, Value: cookie})
	got = r.rec.take(r.t)
	if len(got) == 0 || got[0].disc != pppoe.CodePADS || got[0].discovery.Session == 0 {
		r.t.Fatalf("answer to PADR: %+v", got)
	}
	return got[1:], got[0].discovery.Session
}

func clientConfReq(id uint8) ppp.Packet {
	magic := binary.BigEndian.AppendUint32(nil, 0x01020304)
	return ppp.Packet{Code: ppp.ConfReq, ID: id, Data: ppp.AppendOptions(nil, []ppp.Option{{Type: 5, Value: magic}})}
}

// The PADS goes out alone: our LCP Configure-Request waits for the
// client's (a request sent with the PADS can overtake it, and the client
// discards session frames before its PADS).  The client's request brings
// ours, then our Ack, in that order.
func TestLCPWaitsForTheClientsRequestAfterThePADS(t *testing.T) {
	r := newPPPoERig(t)
	with, sid := r.session()
	if len(with) != 0 {
		t.Fatalf("sent with the PADS: %+v, want nothing", with)
	}
	r.lcp(sid, clientConfReq(1))
	got := r.rec.take(t)
	if len(got) != 2 || got[0].proto != ppp.ProtoLCP || got[0].code != ppp.ConfReq ||
		got[1].proto != ppp.ProtoLCP || got[1].code != ppp.ConfAck {
		t.Fatalf("answer to the client's Configure-Request: %+v, want our Configure-Request then Configure-Ack", got)
	}
}

// A client that sends nothing after the PADS gets our request after one
// restart interval, and LCP runs its restart timer from there.
func TestLCPOpensActivelyAfterARestartIntervalOfSilence(t *testing.T) {
	r := newPPPoERig(t)
	if with, _ := r.session(); len(with) != 0 {
		t.Fatalf("sent with the PADS: %+v", with)
	}
	r.now = r.now.Add(2900 * time.Millisecond)
	r.settle()
	if got := r.rec.take(t); len(got) != 0 {
		t.Fatalf("sent before the restart interval: %+v", got)
	}
	for i := 0; i < 2; i++ {
		r.now = r.now.Add(3100 * time.Millisecond)
		r.settle()
		got := r.rec.take(t)
		if len(got) != 1 || got[0].proto != ppp.ProtoLCP || got[0].code != ppp.ConfReq {
			t.Fatalf("restart interval %d: sent %+v, want one LCP Configure-Request", i+1, got)
		}
	}
}
