package dpctl

import (
	"context"
	"encoding/json"
	"strconv"
)

// The vBNG's commands (dataplane/bng/README.md, "Control commands").  The
// field names are the data plane's; a zero or empty field is left out, so
// the data plane applies its own default.

// Subscriber is a sub-add request.
type Subscriber struct {
	ID      uint32   `json:"id"`
	QinQ    string   `json:"qinq,omitempty"` // "outer.inner"
	VLAN    uint16   `json:"vlan,omitempty"`
	PPPoE   uint16   `json:"pppoe,omitempty"`
	MAC     string   `json:"mac,omitempty"`
	IPv4    []string `json:"ipv4,omitempty"` // a.b.c.d[/len], up to 4
	IPv6    string   `json:"ipv6,omitempty"` // prefix /16../64
	Policer string   `json:"policer,omitempty"`
	Pipe    string   `json:"pipe,omitempty"`
	Subport *uint32  `json:"subport,omitempty"`
}

// AppendJSON appends the subscriber as a JSON object.  Bulk adds of
// thousands of subscribers are encoded on the hot path of session set-up:
// this avoids encoding/json's reflection (about 4x faster here).  Strings
// go through encoding/json (escapes as JSON requires).
func (s *Subscriber) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendUint(b, uint64(s.ID), 10)
	str := func(k, v string) {
		if v == "" {
			return
		}
		b = append(b, ',', '"')
		b = append(b, k...)
		b = append(b, '"', ':')
		b = appendJSONString(b, v)
	}
	num := func(k string, v uint64) {
		b = append(b, ',', '"')
		b = append(b, k...)
		b = append(b, '"', ':')
		b = strconv.AppendUint(b, v, 10)
	}
	str("qinq", s.QinQ)
	if s.VLAN != 0 {
		num("vlan", uint64(s.VLAN))
	}
	if s.PPPoE != 0 {
		num("pppoe", uint64(s.PPPoE))
	}
	str("mac", s.MAC)
	if len(s.IPv4) > 0 {
		b = append(b, `,"ipv4":[`...)
		for i, a := range s.IPv4 {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, a)
		}
		b = append(b, ']')
	}
	str("ipv6", s.IPv6)
	str("policer", s.Policer)
	str("pipe", s.Pipe)
	if s.Subport != nil {
		num("subport", uint64(*s.Subport))
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string.  Names, tags and
// addresses are printable ASCII without quotes or backslashes: copied as
// they are (json.Marshal's reflection and its allocation, six times a
// subscriber, were a tenth of the objects the PFCP function allocated
// per session); anything else goes through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			enc, _ := json.Marshal(s) // never fails for a string
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// BulkResult is sub-add-bulk's answer.
type BulkResult struct {
	Added   int   `json:"added"`
	TableUS int64 `json:"table_us"`
}

// SubAddBulkLine is the request line of sub-add-bulk for subs.
func SubAddBulkLine(subs []Subscriber) []byte {
	b := make([]byte, 0, 64+len(subs)*160)
	b = append(b, `{"cmd":"sub-add-bulk","subscribers":[`...)
	for i := range subs {
		if i > 0 {
			b = append(b, ',')
		}
		b = subs[i].AppendJSON(b)
	}
	return append(b, ']', '}')
}

// GoSubAddBulk sends one sub-add-bulk without waiting.  The data plane
// applies the batch whole or not at all; on an error, Error.Index names the
// entry it refused.
func (c *Client) GoSubAddBulk(ctx context.Context, subs []Subscriber) *Call {
	return c.GoRaw(ctx, "sub-add-bulk", SubAddBulkLine(subs))
}

// SubAdd adds or replaces one subscriber.
func (c *Client) SubAdd(ctx context.Context, s Subscriber) error {
	line := append([]byte(`{"cmd":"sub-add",`), s.AppendJSON(nil)[1:]...)
	_, err := c.GoRaw(ctx, "sub-add", line).Wait(ctx)
	return err
}

// SubAddBulk adds or replaces many subscribers in one request.
func (c *Client) SubAddBulk(ctx context.Context, subs []Subscriber) (BulkResult, error) {
	var r BulkResult
	raw, err := c.GoSubAddBulk(ctx, subs).Wait(ctx)
	if err == nil {
		err = json.Unmarshal(raw, &r)
	}
	return r, err
}

// GoSubDel sends one sub-del without waiting.
func (c *Client) GoSubDel(ctx context.Context, id uint32) *Call {
	line := strconv.AppendUint([]byte(`{"cmd":"sub-del","id":`), uint64(id), 10)
	return c.GoRaw(ctx, "sub-del", append(line, '}'))
}

// SubDel deletes one subscriber.
func (c *Client) SubDel(ctx context.Context, id uint32) error {
	_, err := c.GoSubDel(ctx, id).Wait(ctx)
	return err
}

// Counter is a packets/bytes pair.
type Counter struct {
	Pkts  uint64 `json:"pkts"`
	Bytes uint64 `json:"bytes"`
}

// SubscriberState is sub-get's answer: the subscriber as stored, with its
// counters (uplink bytes are IP bytes by policer colour, downlink bytes are
// access frame bytes).
type SubscriberState struct {
	ID       uint32             `json:"id"`
	QinQ     string             `json:"qinq"`
	VLAN     uint16             `json:"vlan"`
	PPPoE    uint16             `json:"pppoe"`
	MAC      string             `json:"mac"`
	IPv4     []string           `json:"ipv4"`
	IPv6     string             `json:"ipv6"`
	Policer  *string            `json:"policer"`
	Pipe     string             `json:"pipe"`
	Subport  uint32             `json:"subport"`
	PipeID   uint32             `json:"pipe_id"`
	Uplink   map[string]Counter `json:"uplink"`
	Downlink Counter            `json:"downlink"`
	Drops    map[string]uint64  `json:"drops"`
}

// SubGet reads one subscriber with its counters.
func (c *Client) SubGet(ctx context.Context, id uint32) (SubscriberState, error) {
	var s SubscriberState
	err := c.Cmd(ctx, "sub-get", map[string]any{"id": id}, &s)
	return s, err
}

// SubList reads subscribers [offset, offset+limit) in id order (no counters).
func (c *Client) SubList(ctx context.Context, offset, limit int) ([]SubscriberState, int, error) {
	var r struct {
		Subscribers []SubscriberState `json:"subscribers"`
		Total       int               `json:"total"`
	}
	err := c.Cmd(ctx, "sub-list", map[string]any{"offset": offset, "limit": limit}, &r)
	return r.Subscribers, r.Total, err
}

// Policer is a policer-add request (rates bit/s, sizes bytes, as text the
// data plane parses: "20M", "64K" or plain integers).
type Policer struct {
	Name   string `json:"name"`
	CIR    string `json:"cir"`
	CBS    string `json:"cbs"`
	PIR    string `json:"pir,omitempty"`
	PBS    string `json:"pbs,omitempty"`
	EIR    string `json:"eir,omitempty"`
	EBS    string `json:"ebs,omitempty"`
	Mode   string `json:"mode,omitempty"`
	Yellow string `json:"yellow,omitempty"`
}

// PolicerAdd adds or replaces an uplink policer profile.
func (c *Client) PolicerAdd(ctx context.Context, p Policer) error {
	req := struct {
		Cmd string `json:"cmd"`
		Policer
	}{"policer-add", p}
	return c.Do(ctx, "policer-add", req, nil)
}

// Pipe is a pipe-add request.
type Pipe struct {
	Name     string `json:"name"`
	Rate     string `json:"rate"`
	TBSize   string `json:"tb_size,omitempty"`
	TCPeriod string `json:"tc_period,omitempty"`
}

// PipeAdd adds or changes a downlink HQoS pipe profile.
func (c *Client) PipeAdd(ctx context.Context, p Pipe) error {
	req := struct {
		Cmd string `json:"cmd"`
		Pipe
	}{"pipe-add", p}
	return c.Do(ctx, "pipe-add", req, nil)
}

// Profiles is profile-list's answer (rates in bit/s).
type Profiles struct {
	Policers []struct {
		Name string `json:"name"`
		Mode string `json:"mode"`
		CIR  uint64 `json:"cir"`
		CBS  uint64 `json:"cbs"`
		PIR  uint64 `json:"pir"`
		PBS  uint64 `json:"pbs"`
	} `json:"policers"`
	Pipes []struct {
		Name   string `json:"name"`
		Rate   uint64 `json:"rate"`
		TBSize uint64 `json:"tb_size"`
	} `json:"pipes"`
}

// ProfileList reads the policer and pipe profiles.
func (c *Client) ProfileList(ctx context.Context) (Profiles, error) {
	var p Profiles
	err := c.Cmd(ctx, "profile-list", nil, &p)
	return p, err
}

// BNGStats is the part of bng-stats the control plane reads.
type BNGStats struct {
	Subscribers int `json:"subscribers"`
	Uplink      struct {
		Pkts   uint64            `json:"pkts"`
		Punted map[string]uint64 `json:"punted"`
	} `json:"uplink"`
	Downlink struct {
		Pkts uint64 `json:"pkts"`
	} `json:"downlink"`
}

// BNGStats reads the BNG's totals.
func (c *Client) BNGStats(ctx context.Context) (BNGStats, error) {
	var s BNGStats
	err := c.Cmd(ctx, "bng-stats", nil, &s)
	return s, err
}

// EngineStats is the part of stats the control plane reads.
type EngineStats struct {
	UptimeS float64 `json:"uptime_s"`
}

// Stats reads the engine's uptime (and nothing else it does not need).
func (c *Client) Stats(ctx context.Context) (EngineStats, error) {
	var s EngineStats
	err := c.Cmd(ctx, "stats", nil, &s)
	return s, err
}

// Counters is one subscriber's row of sub-counters: uplink IP bytes by
// policer colour, downlink access frame bytes.
type Counters struct {
	ID                       uint32
	Green, Yellow, Red, Down Counter
}

// CountersResult is sub-counters' answer.
type CountersResult struct {
	Rows    []Counters
	Missing []uint32 // ids that hold no subscriber
}

// GoSubCounters asks for the counters of many subscribers (at most 65536)
// without waiting; DecodeCounters reads the answer.
func (c *Client) GoSubCounters(ctx context.Context, ids []uint32) *Call {
	b := []byte(`{"cmd":"sub-counters","ids":[`)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(id), 10)
	}
	return c.GoRaw(ctx, "sub-counters", append(b, ']', '}'))
}

// DecodeCounters reads a sub-counters answer.
func DecodeCounters(raw json.RawMessage) (CountersResult, error) {
	var r struct {
		Counters [][9]uint64 `json:"counters"`
		Missing  []uint32    `json:"missing"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return CountersResult{}, err
	}
	out := CountersResult{Rows: make([]Counters, len(r.Counters)), Missing: r.Missing}
	for i, x := range r.Counters {
		out.Rows[i] = Counters{ID: uint32(x[0]), Green: Counter{x[1], x[2]}, Yellow: Counter{x[3], x[4]},
			Red: Counter{x[5], x[6]}, Down: Counter{x[7], x[8]}}
	}
	return out, nil
}

// SubCounters reads the counters of many subscribers.
func (c *Client) SubCounters(ctx context.Context, ids []uint32) (CountersResult, error) {
	raw, err := c.GoSubCounters(ctx, ids).Wait(ctx)
	if err != nil {
		return CountersResult{}, err
	}
	return DecodeCounters(raw)
}
