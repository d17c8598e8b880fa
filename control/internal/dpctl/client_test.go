package dpctl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/dptest"
)

func sub(id uint32) dpctl.Subscriber {
	return dpctl.Subscriber{ID: id, QinQ: fmt.Sprintf("%d.%d", 100+id/4000, 1+id%4000),
		MAC:  fmt.Sprintf("02:00:00:10:%02x:%02x", id>>8&0xff, id&0xff),
		IPv4: []string{fmt.Sprintf("198.18.%d.%d", 100+id/250, 1+id%250)}}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestSubscriberAddGetDeleteRoundTrip(t *testing.T) {
	dp := dptest.StartBNG(t, dptest.Options{})
	c := dpctl.New(dp.Socket, dpctl.Options{})
	defer c.Close()
	s := sub(7)
	s.IPv6 = "2001:db8:107::/56"
	if err := c.SubAdd(ctx(t), s); err != nil {
		t.Fatal(err)
	}
	got, err := c.SubGet(ctx(t), 7)
	if err != nil {
		t.Fatal(err)
	}
	if got.QinQ != s.QinQ || got.MAC != s.MAC || got.IPv6 != s.IPv6 || len(got.IPv4) != 1 || got.IPv4[0] != s.IPv4[0] {
		t.Fatalf("sub-get %+v, want %+v", got, s)
	}
	if err := c.SubDel(ctx(t), 7); err != nil {
		t.Fatal(err)
	}
	_, err = c.SubGet(ctx(t), 7)
	var de *dpctl.Error
	if !errors.As(err, &de) || !strings.Contains(de.Msg, "no subscriber") {
		t.Fatalf("sub-get of a deleted subscriber: %v", err)
	}
}

func TestPipelinedRequestsAreAnsweredInOrder(t *testing.T) {
	dp := dptest.StartBNG(t, dptest.Options{})
	c := dpctl.New(dp.Socket, dpctl.Options{MaxInFlight: 32})
	defer c.Close()
	var calls []*dpctl.Call
	for id := uint32(1); id <= 300; id++ {
		s := sub(id)
		calls = append(calls, c.GoRaw(ctx(t), "sub-add",
			[]byte(`{"cmd":"sub-add",`+string(s.AppendJSON(nil)[1:]))))
		// Every tenth request is a sub-get of an id that does not exist:
		// its error must land on that call, not on a neighbour.
		if id%10 == 0 {
			calls = append(calls, c.Go(ctx(t), "sub-get", map[string]any{"cmd": "sub-get", "id": 4000 + id}))
		}
	}
	for i, k := range calls {
		_, err := k.Wait(ctx(t))
		if k.Cmd == "sub-get" {
			var de *dpctl.Error
			if !errors.As(err, &de) || !strings.Contains(de.Msg, "no subscriber") {
				t.Fatalf("call %d (sub-get): %v", i, err)
			}
		} else if err != nil {
			t.Fatalf("call %d (sub-add): %v", i, err)
		}
	}
	subs, total, err := c.SubList(ctx(t), 0, 1000)
	if err != nil || total != 300 || len(subs) != 300 {
		t.Fatalf("sub-list: %d/%d, %v", len(subs), total, err)
	}
}

func TestBulkAddErrorNamesTheEntry(t *testing.T) {
	dp := dptest.StartBNG(t, dptest.Options{})
	c := dpctl.New(dp.Socket, dpctl.Options{})
	defer c.Close()
	subs := []dpctl.Subscriber{sub(1), sub(2), sub(3)}
	subs[2].IPv4 = subs[0].IPv4 // an address another entry owns
	_, err := c.SubAddBulk(ctx(t), subs)
	var de *dpctl.Error
	if !errors.As(err, &de) || de.Index < 0 {
		t.Fatalf("bulk with a conflicting entry: %v", err)
	}
	if de.Index != 2 && de.Index != 0 {
		t.Fatalf("bulk error names entry %d: %v", de.Index, err)
	}
	r, err := c.SubAddBulk(ctx(t), subs[:2])
	if err != nil || r.Added != 2 {
		t.Fatalf("bulk of two: %+v %v", r, err)
	}
}

func TestLongAnswerIsReadWhole(t *testing.T) {
	dp := dptest.StartBNG(t, dptest.Options{})
	c := dpctl.New(dp.Socket, dpctl.Options{})
	defer c.Close()
	var subs []dpctl.Subscriber
	for id := uint32(1); id <= 4000; id++ {
		subs = append(subs, sub(id))
	}
	if _, err := c.SubAddBulk(ctx(t), subs); err != nil {
		t.Fatal(err)
	}
	// About 600 KB of answer: more than the reader's 256 KiB buffer.
	got, total, err := c.SubList(ctx(t), 0, 4000)
	if err != nil || total != 4000 || len(got) != 4000 || got[3999].ID != 4000 {
		t.Fatalf("sub-list of 4000: %d/%d %v", len(got), total, err)
	}
}

func TestReconnectsAfterDataPlaneRestart(t *testing.T) {
	dp := dptest.StartBNG(t, dptest.Options{})
	c := dpctl.New(dp.Socket, dpctl.Options{})
	defer c.Close()
	if err := c.SubAdd(ctx(t), sub(1)); err != nil {
		t.Fatal(err)
	}
	g := c.Generation()
	dp.Restart()
	// The first request after the crash may find the old connection dead.
	var err error
	for i := 0; i < 2; i++ {
		if _, err = c.Stats(ctx(t)); err == nil {
			break
		}
		if !errors.Is(err, dpctl.ErrConnLost) {
			t.Fatalf("after restart: %v", err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if c.Generation() == g {
		t.Fatalf("generation %d did not move on after the restart", g)
	}
	st, err := c.BNGStats(ctx(t))
	if err != nil || st.Subscribers != 0 {
		t.Fatalf("the restarted data plane has %d subscribers (%v)", st.Subscribers, err)
	}
}

func TestEvictedIdleConnectionDialsAgain(t *testing.T) {
	dp := dptest.StartBNG(t, dptest.Options{})
	c := dpctl.New(dp.Socket, dpctl.Options{})
	defer c.Close()
	if _, err := c.Stats(ctx(t)); err != nil {
		t.Fatal(err)
	}
	g := c.Generation()
	// 64 more connections: the server evicts the one idle the longest, ours.
	var hogs []net.Conn
	for i := 0; i < 64; i++ {
		h, err := net.Dial("unix", dp.Socket)
		if err != nil {
			t.Fatal(err)
		}
		hogs = append(hogs, h)
		// Each hog has just connected, so it is younger than ours.
		time.Sleep(2 * time.Millisecond)
	}
	defer func() {
		for _, h := range hogs {
			h.Close()
		}
	}()
	time.Sleep(300 * time.Millisecond)
	hogs[0].Close() // a free slot for the redial
	hogs = hogs[1:]
	var err error
	for i := 0; i < 3; i++ {
		if _, err = c.Stats(ctx(t)); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("after eviction: %v", err)
	}
	if c.Generation() == g {
		t.Fatal("the client kept a connection the server evicted")
	}
}

func TestOversizedRequestRefusedBeforeSending(t *testing.T) {
	c := dpctl.New("/nonexistent/socket", dpctl.Options{MaxLine: 1024})
	_, err := c.GoRaw(ctx(t), "sub-add-bulk", make([]byte, 2000)).Wait(ctx(t))
	if err == nil || !strings.Contains(err.Error(), "line limit") {
		t.Fatalf("oversized line: %v", err)
	}
	_, err = c.GoRaw(ctx(t), "x", []byte("{\"cmd\":\"stats\"}\n{\"cmd\":\"stats\"}")).Wait(ctx(t))
	if err == nil || !strings.Contains(err.Error(), "newline") {
		t.Fatalf("two lines in one request: %v", err)
	}
}

func TestSubscriberJSONMatchesEncodingJSON(t *testing.T) {
	var sp uint32 = 3
	s := dpctl.Subscriber{ID: 9, VLAN: 12, PPPoE: 0x12, MAC: "02:00:00:00:00:01",
		IPv4: []string{"198.18.100.9", "198.18.101.0/29"}, IPv6: "2001:db8::/56",
		Policer: "p\"q", Pipe: "gold", Subport: &sp}
	got := string(s.AppendJSON(nil))
	want := `{"id":9,"vlan":12,"pppoe":18,"mac":"02:00:00:00:00:01","ipv4":["198.18.100.9","198.18.101.0/29"],"ipv6":"2001:db8::/56","policer":"p\"q","pipe":"gold","subport":3}`
	if got != want {
		t.Fatalf("AppendJSON\n got %s\nwant %s", got, want)
	}
}

// Whatever a name holds (quotes, backslashes, control characters,
// UTF-8, HTML's specials), the line reads back as the same strings.
func TestSubscriberJSONEscapesAnyName(t *testing.T) {
	for _, name := range []string{"gold", `a"b`, `a\b`, "tab\there", "nl\n", "\x00\x1f\x7f", "débit", "<&>", "\xff\xfe"} {
		s := dpctl.Subscriber{ID: 1, MAC: "02:00:00:00:00:01", Policer: name, Pipe: name}
		var back struct{ Policer, Pipe string }
		if err := json.Unmarshal(s.AppendJSON(nil), &back); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		var want string // as encoding/json writes it (invalid UTF-8 byte by byte as U+FFFD)
		enc, _ := json.Marshal(name)
		json.Unmarshal(enc, &want)
		if back.Policer != want || back.Pipe != want {
			t.Fatalf("%q read back as %q %q", name, back.Policer, back.Pipe)
		}
	}
}

func TestSubCountersReadsManySubscribersAtOnce(t *testing.T) {
	dp := dptest.StartBNG(t, dptest.Options{})
	c := dpctl.New(dp.Socket, dpctl.Options{})
	defer c.Close()
	var subs []dpctl.Subscriber
	var ids []uint32
	for id := uint32(1); id <= 500; id++ {
		subs = append(subs, sub(id))
		ids = append(ids, id)
	}
	if _, err := c.SubAddBulk(ctx(t), subs); err != nil {
		t.Fatal(err)
	}
	r, err := c.SubCounters(ctx(t), append(ids, 4000, 4001))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 500 || r.Rows[499].ID != 500 || len(r.Missing) != 2 || r.Missing[0] != 4000 {
		t.Fatalf("%d rows (last %+v), missing %v", len(r.Rows), r.Rows[len(r.Rows)-1], r.Missing)
	}
	_, err = c.SubCounters(ctx(t), []uint32{0})
	var de *dpctl.Error
	if !errors.As(err, &de) || !strings.Contains(de.Msg, "ids[0]") {
		t.Fatalf("id 0: %v", err)
	}
}
