package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"edgeplane/control/internal/pfcp/cpsim"
)

// serve reads one JSON command per line on stdin and answers one JSON
// object per line on stdout ({"ok": true, ...} or {"ok": false,
// "error": ...}), for tests that drive a control plane step by step.
//
//	{"cmd": "associate", "retention": false}
//	{"cmd": "heartbeat"} / {"cmd": "release"} / {"cmd": "restart"}
//	{"cmd": "silent", "on": true}             stop answering the function's heartbeats
//	{"cmd": "establish", "sub": {...}}        -> cause, up_seid, offending, created
//	{"cmd": "default", "port": "access", "teid": 4096}   the default (IBCP) session
//	{"cmd": "modify", "up_seid": N, "ul_mbr": k, "ul_gbr": k, "dl_mbr": k, "query_urr": true}
//	{"cmd": "delete", "up_seid": N}           -> cause, usage
//	{"cmd": "reports"}                        usage reports received so far
//	{"cmd": "gtpu-listen", "addr": "A:2152"}  end of the redirect tunnels (frames kept)
//	{"cmd": "gtpu-frames"}                    frames received: teid, hex
//	{"cmd": "gtpu-send", "to": "A:2152", "teid": N, "frame": "hex"}
//	{"cmd": "raw", "hex": "...", "wait": true}
func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	upAddr := fs.String("upf", "", "the function's PFCP address")
	local := fs.String("local", "0.0.0.0:8805", "our PFCP address")
	node := fs.String("node", "", "our Node ID (default: the local address)")
	fs.Parse(args)
	up, err := netip.ParseAddrPort(*upAddr)
	if err != nil {
		return fmt.Errorf("--upf: %w", err)
	}
	loc, err := netip.ParseAddrPort(*local)
	if err != nil {
		return fmt.Errorf("--local: %w", err)
	}
	cp, err := cpsim.New(loc, up, *node)
	if err != nil {
		return err
	}
	defer cp.Close()
	s := &server{cp: cp, local: loc.Addr()}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req map[string]any
		var res map[string]any
		dec := json.NewDecoder(bytes.NewReader(in.Bytes()))
		dec.UseNumber() // SEIDs are 64-bit: not through float64
		if err := dec.Decode(&req); err != nil {
			res = map[string]any{"ok": false, "error": err.Error()}
		} else if r, err := s.do(req); err != nil {
			res = map[string]any{"ok": false, "error": err.Error()}
		} else {
			res = r
			res["ok"] = true
		}
		out.Encode(res)
	}
	return in.Err()
}

type server struct {
	cp     *cpsim.CP
	local  netip.Addr
	gtp    *net.UDPConn
	mu     sync.Mutex
	frames []map[string]any
}

func num(req map[string]any, k string) uint64 {
	n, _ := req[k].(json.Number)
	v, _ := strconv.ParseUint(string(n), 10, 64)
	return v
}

func str(req map[string]any, k string) string {
	v, _ := req[k].(string)
	return v
}

func (s *server) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 20*time.Second)
}

func (s *server) do(req map[string]any) (map[string]any, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	switch str(req, "cmd") {
	case "associate":
		var extra []*ie.IE
		if b, _ := req["retention"].(bool); b {
			extra = append(extra, ie.NewPFCPSessionRetentionInformation(ie.NewCPPFCPEntityIPAddress(s.local.AsSlice(), nil)))
		}
		a, err := s.cp.Associate(ctx, extra...)
		if err != nil {
			return nil, err
		}
		return map[string]any{"cause": cpsim.Cause(a)}, nil
	case "release":
		a, err := s.cp.Release(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"cause": cpsim.Cause(a)}, nil
	case "heartbeat":
		h, err := s.cp.Heartbeat(ctx)
		if err != nil {
			return nil, err
		}
		ts, _ := h.RecoveryTimeStamp.RecoveryTimeStamp()
		return map[string]any{"recovery": ts.Unix()}, nil
	case "restart":
		s.cp.Restart()
		return map[string]any{}, nil
	case "silent":
		on, _ := req["on"].(bool)
		s.cp.AnswerHeartbeats.Store(!on)
		return map[string]any{"heartbeats_from_up": s.cp.HeartbeatsFromUP()}, nil
	case "establish":
		spec, err := subscriberSpec(req["sub"])
		if err != nil {
			return nil, err
		}
		r, err := s.cp.Establish(ctx, spec.CPSEID, spec.Establishment())
		if err != nil {
			return nil, err
		}
		return establishResult(r), nil
	case "default":
		cpAddr := s.local
		if a := str(req, "cp_addr"); a != "" {
			cpAddr, _ = netip.ParseAddr(a)
		}
		r, err := s.cp.Establish(ctx, num(req, "cp_seid"), cpsim.DefaultSession(str(req, "port"), cpAddr, uint32(num(req, "teid"))))
		if err != nil {
			return nil, err
		}
		return establishResult(r), nil
	case "modify":
		body := cpsim.RateChange(num(req, "ul_mbr"), num(req, "ul_gbr"), num(req, "dl_mbr"))
		if q, _ := req["query_urr"].(bool); q {
			body = append(body, ie.NewQueryURR(ie.NewURRID(cpsim.URRID)))
		}
		r, err := s.cp.Modify(ctx, num(req, "up_seid"), body)
		if err != nil {
			return nil, err
		}
		return map[string]any{"cause": cpsim.Cause(r), "usage": usageOf(r.UsageReport)}, nil
	case "delete":
		r, err := s.cp.Delete(ctx, num(req, "up_seid"))
		if err != nil {
			return nil, err
		}
		return map[string]any{"cause": cpsim.Cause(r), "usage": usageOf(r.UsageReport)}, nil
	case "reports":
		var all []map[string]any
		for _, r := range s.cp.Reports() {
			for _, u := range usageOf(r.UsageReport) {
				u["cp_seid"] = r.SEID()
				all = append(all, u)
			}
		}
		return map[string]any{"reports": all}, nil
	case "gtpu-listen":
		a, err := netip.ParseAddrPort(str(req, "addr"))
		if err != nil {
			return nil, err
		}
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(a))
		if err != nil {
			return nil, err
		}
		s.gtp = c
		go s.readGTPU()
		return map[string]any{}, nil
	case "gtpu-frames":
		s.mu.Lock()
		defer s.mu.Unlock()
		return map[string]any{"frames": s.frames}, nil
	case "gtpu-send":
		to, err := netip.ParseAddrPort(str(req, "to"))
		if err != nil {
			return nil, err
		}
		fr, err := hex.DecodeString(str(req, "frame"))
		if err != nil {
			return nil, err
		}
		if s.gtp == nil {
			return nil, errors.New("gtpu-listen first")
		}
		buf := gopacket.NewSerializeBuffer()
		g := &layers.GTPv1U{Version: 1, ProtocolType: 1, MessageType: 255, TEID: uint32(num(req, "teid"))}
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, g, gopacket.Payload(fr)); err != nil {
			return nil, err
		}
		_, err = s.gtp.WriteToUDPAddrPort(buf.Bytes(), to)
		return map[string]any{}, err
	case "raw":
		b, err := hex.DecodeString(str(req, "hex"))
		if err != nil {
			return nil, err
		}
		var ch <-chan message.Message
		if w, _ := req["wait"].(bool); w && len(b) >= 8 {
			seq := uint32(b[4])<<16 | uint32(b[5])<<8 | uint32(b[6])
			if b[0]&1 != 0 && len(b) >= 16 {
				seq = uint32(b[12])<<16 | uint32(b[13])<<8 | uint32(b[14])
			}
			ch = s.cp.Expect(seq)
		}
		if err := s.cp.WriteRaw(netip.AddrPort{}, b); err != nil {
			return nil, err
		}
		if ch == nil {
			return map[string]any{}, nil
		}
		select {
		case m := <-ch:
			return map[string]any{"type": m.MessageType(), "cause": cpsim.Cause(m)}, nil
		case <-time.After(3 * time.Second):
			return map[string]any{"type": 0}, nil
		}
	case "next-seq":
		return map[string]any{"seq": s.cp.NextSeq()}, nil
	}
	return nil, fmt.Errorf("unknown command %q", str(req, "cmd"))
}

func (s *server) readGTPU() {
	buf := make([]byte, 9216)
	for {
		n, _, err := s.gtp.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		var g layers.GTPv1U
		if g.DecodeFromBytes(buf[:n], gopacket.NilDecodeFeedback) != nil || g.MessageType != 255 {
			continue
		}
		s.mu.Lock()
		s.frames = append(s.frames, map[string]any{"teid": g.TEID, "frame": hex.EncodeToString(g.Payload)})
		s.mu.Unlock()
	}
}

func establishResult(r *message.SessionEstablishmentResponse) map[string]any {
	res := map[string]any{"cause": cpsim.Cause(r), "cp_seid": r.SEID()}
	if seid, err := cpsim.UPSEID(r); err == nil {
		res["up_seid"] = seid
	}
	if r.OffendingIE != nil {
		o, _ := r.OffendingIE.OffendingIE()
		res["offending"] = o
	}
	var created []map[string]any
	for _, c := range append(append([]*ie.IE(nil), r.CreatedPDR...), r.CreatedTrafficEndpoint...) {
		for _, k := range c.ChildIEs {
			if k.Type == ie.FTEID {
				f, err := k.FTEID()
				if err == nil {
					created = append(created, map[string]any{"teid": f.TEID, "addr": f.IPv4Address.String()})
				}
			}
		}
	}
	res["created"] = created
	return res
}

func usageOf(reps []*ie.IE) []map[string]any {
	var out []map[string]any
	for _, u := range reps {
		m := map[string]any{}
		for _, k := range u.ChildIEs {
			switch k.Type {
			case ie.URRID:
				m["urr"], _ = k.URRID()
			case ie.URSEQN:
				m["seq"], _ = k.URSEQN()
			case ie.UsageReportTrigger:
				m["trigger"] = hex.EncodeToString(k.Payload)
			case ie.VolumeMeasurement:
				if v, err := k.VolumeMeasurement(); err == nil {
					m["total_bytes"], m["ul_bytes"], m["dl_bytes"] = v.TotalVolume, v.UplinkVolume, v.DownlinkVolume
					m["total_pkts"], m["ul_pkts"], m["dl_pkts"] = v.TotalNumberOfPackets, v.UplinkNumberOfPackets, v.DownlinkNumberOfPackets
				}
			case ie.DurationMeasurement:
				if d, err := k.DurationMeasurement(); err == nil {
					m["duration_s"] = d.Seconds()
				}
			}
		}
		out = append(out, m)
	}
	return out
}

// subscriberSpec reads a session's JSON description.
func subscriberSpec(v any) (cpsim.Subscriber, error) {
	var j struct {
		CPSEID     uint64 `json:"cp_seid"`
		Port       string `json:"port"`
		STag, CTag uint16 `json:"-"`
		SV         uint16 `json:"stag"`
		CV         uint16 `json:"ctag"`
		MAC        string `json:"mac"`
		PPPoE      uint16 `json:"pppoe"`
		IPv4       string `json:"ipv4"`
		IPv6       string `json:"ipv6"`
		NI         string `json:"network_instance"`
		ULMBR      uint64 `json:"ul_mbr"`
		ULGBR      uint64 `json:"ul_gbr"`
		DLMBR      uint64 `json:"dl_mbr"`
		URR        *struct {
			PeriodS    float64 `json:"period_s"`
			VolThresh  uint64  `json:"vol_thresh"`
			TimeThresh float64 `json:"time_thresh_s"`
		} `json:"urr"`
		Redirect     bool   `json:"redirect"`
		CPAddr       string `json:"cp_addr"`
		CPTEID       uint32 `json:"cp_teid"`
		StandardOnly bool   `json:"standard_only"`
	}
	b, _ := json.Marshal(v)
	if err := json.Unmarshal(b, &j); err != nil {
		return cpsim.Subscriber{}, err
	}
	s := cpsim.Subscriber{CPSEID: j.CPSEID, LogicalPort: j.Port, STag: j.SV, CTag: j.CV, PPPoE: j.PPPoE,
		NetworkInst: j.NI, ULMBR: j.ULMBR, ULGBR: j.ULGBR, DLMBR: j.DLMBR, Redirect: j.Redirect, CPTEID: j.CPTEID,
		StandardOnly: j.StandardOnly}
	var err error
	if j.MAC != "" {
		if s.MAC, err = net.ParseMAC(j.MAC); err != nil {
			return s, err
		}
	}
	if j.IPv4 != "" {
		if s.IPv4, err = netip.ParseAddr(j.IPv4); err != nil {
			return s, err
		}
	}
	if j.IPv6 != "" {
		if s.IPv6, err = netip.ParsePrefix(j.IPv6); err != nil {
			return s, err
		}
	}
	if j.CPAddr != "" {
		if s.CPAddr, err = netip.ParseAddr(j.CPAddr); err != nil {
			return s, err
		}
	}
	if j.URR != nil {
		s.URR = &cpsim.URR{Period: time.Duration(j.URR.PeriodS * float64(time.Second)), VolThresh: j.URR.VolThresh,
			TimeThresh: time.Duration(j.URR.TimeThresh * float64(time.Second))}
	}
	return s, nil
}
