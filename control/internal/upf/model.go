// Package upf is the PFCP user-plane function of the vBNG: it speaks
// 3GPP TS 29.244 with the Broadband Forum's TR-459 extensions to a BNG
// control plane and turns each PFCP session into subscriber, profile and
// control-packet-redirect state of edgeplane-dp, through the data plane's
// control socket only (the business functions the socket's commands call).
//
// The pieces, in the order a request meets them:
//
//	server.go     the UDP socket: framing (pfcp/wire), dispatch, the
//	              duplicate cache of answered requests (txn.go)
//	node.go       association set-up, update and release; heartbeats both
//	              ways; a control plane's restart or loss
//	parse.go      Create/Update/Remove PDR, FAR, QER, URR and Traffic
//	              Endpoint IEs into the session model below; anything we
//	              cannot honour is refused with its cause and offending IE
//	translate.go  the model into what the data plane and the redirect need
//	              (a subscriber, its profiles, redirect tunnels)
//	state.go      sessions, the keys and addresses they hold, identifiers
//	apply.go      plans applied in batches (one sub-add-bulk for many
//	              establishments), whole or not at all per session
//	urr.go        usage measurement from the data plane's counters, reports
//	store.go      what survives a restart of this process: sessions in a
//	              log and its snapshot (store_log.go), the rest in bbolt
//	addrtable.go  the UE addresses the sessions hold (open addressing)
//	accesskeys.go the access keys they hold (the same table, fixed-size keys)
//	ruleset.go    a session's rules of one kind by id
//	sessionblock.go  a new session and its rules in one allocation
//	sesstable.go  the sessions by our SEID and by the control plane's
//	rxgen.go      a generation of the duplicate cache, by peer and number
//	recover.go    restore at start; replay into a restarted data plane
//	cpr.go        the control packet redirect (GTP-U to the control plane)
package upf

import (
	"net/netip"
	"time"

	"edgeplane/control/internal/pfcp/bbf"
)

// 3GPP TS 29.244 clause 8.2.2 Source Interface / 8.2.24 Destination Interface.
const (
	IfAccess     uint8 = 0
	IfCore       uint8 = 1
	IfSGiLAN     uint8 = 2 // SGi-LAN / N6-LAN
	IfCPFunction uint8 = 3
)

// Apply Action bits (clause 8.2.26, octet 5).
const (
	ActDrop uint16 = 0x01
	ActForw uint16 = 0x02
	ActBuff uint16 = 0x04
	ActNoCP uint16 = 0x08
	ActDupl uint16 = 0x10
)

// Outer Header Creation descriptions (clause 8.2.56), as go-pfcp packs
// octets 5 and 6 into a uint16.
const (
	OHCGTPUUDPIPv4 uint16 = 0x0100
	OHCGTPUUDPIPv6 uint16 = 0x0200
)

// Measurement methods (clause 8.2.40).
const (
	MeasDuration uint8 = 0x01
	MeasVolume   uint8 = 0x02
	MeasEvent    uint8 = 0x04
)

// Reporting triggers (clause 8.2.19), octets 5..7 as one number: bit i of
// octet 5 is 1<<i, octet 6 is 1<<(8+i).
const (
	TrigPERIO uint32 = 1 << 0
	TrigVOLTH uint32 = 1 << 1
	TrigTIMTH uint32 = 1 << 2
	TrigQUHTI uint32 = 1 << 3
	TrigSTART uint32 = 1 << 4
	TrigSTOPT uint32 = 1 << 5
	TrigDROTH uint32 = 1 << 6
	TrigLIUSA uint32 = 1 << 7
	TrigVOLQU uint32 = 1 << 8
	TrigTIMQU uint32 = 1 << 9
)

// Session is one PFCP session, as the control plane described it.  The
// rule sets are keyed by the rule ids the control plane chose (unique
// within the session, TS 29.244 clause 5.2.1).  Stored as storedSession
// (store.go).
type Session struct {
	SEID    uint64     `json:"seid"`    // ours
	CPSEID  uint64     `json:"cp_seid"` // the control plane's F-SEID
	CPAddr  netip.Addr `json:"cp_addr"` // its address in the F-SEID
	CPNode  string     `json:"cp_node"` // the association it belongs to
	PDNType uint8      `json:"pdn_type,omitempty"`
	PDRs    ruleSet[uint16, PDR]
	FARs    ruleSet[uint32, FAR]
	QERs    ruleSet[uint32, QER]
	URRs    ruleSet[uint32, URR]
	TEs     ruleSet[uint8, TE]
	MTU     uint16            `json:"mtu,omitempty"`    // TR-459 MTU, recorded
	SubID   uint32            `json:"sub_id,omitempty"` // its subscriber in the data plane
	Chosen  map[string]uint32 `json:"chosen,omitempty"` // TEIDs we chose (CHOOSE), by what asked
	// Usage counted by data-plane instances that are gone (restarts):
	// what a URR measures is Acc plus the live counters.
	Acc     Usage     `json:"acc"`
	Created time.Time `json:"created"`
}

// UEIP is a UE IP Address IE (clause 8.2.62): an IPv4 address, an IPv6
// address or prefix (IPv6 Prefix Delegation Bits / IPv6 Prefix Length).
type UEIP struct {
	Prefix netip.Prefix `json:"prefix"`
	Dest   bool         `json:"dest,omitempty"` // S/D flag: the address is a destination
}

// VLAN is an S-TAG or C-TAG (clauses 8.2.94, 8.2.95): only the VID is used.
type VLAN struct {
	VID uint16 `json:"vid"`
}

// EthFilter is an Ethernet Packet Filter (clause 7.5.2.2-3).
type EthFilter struct {
	MAC       string `json:"mac,omitempty"` // source MAC (SOUR)
	Ethertype uint16 `json:"ethertype,omitempty"`
	STag      *VLAN  `json:"stag,omitempty"`
	CTag      *VLAN  `json:"ctag,omitempty"`
}

// FTEID is a local F-TEID (clause 8.2.3): chosen by us when Choose.
type FTEID struct {
	TEID     uint32     `json:"teid"`
	Addr     netip.Addr `json:"addr"`
	Choose   bool       `json:"choose,omitempty"`
	ChooseID uint8      `json:"choose_id,omitempty"`
}

// Match is what identifies a subscriber's traffic on the access side and
// where its addresses are: the fields a PDI and the Traffic Endpoints it
// names contribute (TR-459 puts the access fields in the Traffic Endpoint,
// a 3GPP control plane in the PDI's Ethernet Packet Filter).
type Match struct {
	LogicalPort     string         `json:"logical_port,omitempty"`
	STag            *VLAN          `json:"stag,omitempty"`
	CTag            *VLAN          `json:"ctag,omitempty"`
	MAC             string         `json:"mac,omitempty"`
	PPPoESession    uint16         `json:"pppoe,omitempty"`
	UEIPs           []UEIP         `json:"ue_ips,omitempty"`
	FramedRoutes    []netip.Prefix `json:"framed_routes,omitempty"`
	NetworkInstance string         `json:"network_instance,omitempty"`
	Local           *FTEID         `json:"local_fteid,omitempty"`
}

// TE is a Traffic Endpoint (Create Traffic Endpoint, clause 7.5.2.7, with
// TR-459's Logical Port, PPPoE Session ID, S-TAG, C-TAG and MAC address).
type TE struct {
	ID uint8 `json:"id"`
	Match
}

// PDI is a PDR's Packet Detection Information (clause 7.5.2.2-2).
type PDI struct {
	Source uint8   `json:"source"`
	TEIDs  []uint8 `json:"te_ids,omitempty"`
	Match
	EthFilters []EthFilter   `json:"eth_filters,omitempty"`
	SDF        []string      `json:"sdf,omitempty"` // flow descriptions (RFC 6733 IPFilterRule subset)
	PPP        *bbf.PPPProto `json:"ppp,omitempty"`
}

// PDR is a Packet Detection Rule.
type PDR struct {
	ID         uint16   `json:"id"`
	Precedence uint32   `json:"precedence"`
	PDI        PDI      `json:"pdi"`
	OHR        *uint8   `json:"ohr,omitempty"`     // 3GPP Outer Header Removal description
	BBFOHR     *uint8   `json:"bbf_ohr,omitempty"` // BBF Outer Header Removal
	FAR        uint32   `json:"far"`
	QERs       []uint32 `json:"qers,omitempty"`
	URRs       []uint32 `json:"urrs,omitempty"`
}

// OHC is a 3GPP Outer Header Creation (GTP-U towards the control plane).
type OHC struct {
	Desc uint16     `json:"desc"`
	TEID uint32     `json:"teid"`
	Addr netip.Addr `json:"addr"`
}

// FAR is a Forwarding Action Rule.
type FAR struct {
	ID              uint32   `json:"id"`
	Action          uint16   `json:"action"`
	Dest            uint8    `json:"dest"`
	NetworkInstance string   `json:"network_instance,omitempty"`
	OHC             *OHC     `json:"ohc,omitempty"`
	BBFOHC          *bbf.OHC `json:"bbf_ohc,omitempty"`
	LinkedTE        *uint8   `json:"linked_te,omitempty"`
	HasFwdParams    bool     `json:"has_fwd,omitempty"`
}

// QER is a QoS Enforcement Rule; bit rates in kbit/s as PFCP carries them.
type QER struct {
	ID     uint32 `json:"id"`
	GateUL uint8  `json:"gate_ul,omitempty"` // 0 open, 1 closed
	GateDL uint8  `json:"gate_dl,omitempty"`
	MBRUL  uint64 `json:"mbr_ul,omitempty"`
	MBRDL  uint64 `json:"mbr_dl,omitempty"`
	GBRUL  uint64 `json:"gbr_ul,omitempty"`
	GBRDL  uint64 `json:"gbr_dl,omitempty"`
}

// Volume thresholds in octets; 0 is "not set".
type Volume struct {
	Total uint64 `json:"total,omitempty"`
	UL    uint64 `json:"ul,omitempty"`
	DL    uint64 `json:"dl,omitempty"`
}

// URR is a Usage Reporting Rule and its measurement state.
type URR struct {
	ID         uint32 `json:"id"`
	Method     uint8  `json:"method"`
	Triggers   uint32 `json:"triggers"`
	PeriodS    uint32 `json:"period_s,omitempty"`
	VolThresh  Volume `json:"vol_thresh"`
	TimeThresh uint32 `json:"time_thresh_s,omitempty"`
	MeasInfo   uint8  `json:"meas_info,omitempty"`
	// Measurement state: what was reported, so the next report carries
	// the usage since (clause 5.2.2.3.1: a report resets the measurement).
	Seq       uint32    `json:"seq"`
	Start     time.Time `json:"start"`      // start of the current measurement
	Base      Usage     `json:"base"`       // counters at Start
	NextPerio time.Time `json:"next_perio"` // next periodic report
}

// Usage is a subscriber's volume as measured: IP octets and packets,
// uplink split by what the policer passed and what it dropped (a URR with
// MBQE, measure before QoS enforcement, counts both).
type Usage struct {
	ULBytes    uint64 `json:"ul_bytes"`
	ULPkts     uint64 `json:"ul_pkts"`
	ULRedBytes uint64 `json:"ul_red_bytes,omitempty"`
	ULRedPkts  uint64 `json:"ul_red_pkts,omitempty"`
	DLBytes    uint64 `json:"dl_bytes"`
	DLPkts     uint64 `json:"dl_pkts"`
}

func (a Usage) add(b Usage) Usage {
	return Usage{a.ULBytes + b.ULBytes, a.ULPkts + b.ULPkts, a.ULRedBytes + b.ULRedBytes,
		a.ULRedPkts + b.ULRedPkts, a.DLBytes + b.DLBytes, a.DLPkts + b.DLPkts}
}

// since is a - b, each field floored at 0.
func (a Usage) since(b Usage) Usage {
	d := func(x, y uint64) uint64 {
		if x < y {
			return 0
		}
		return x - y
	}
	return Usage{d(a.ULBytes, b.ULBytes), d(a.ULPkts, b.ULPkts), d(a.ULRedBytes, b.ULRedBytes),
		d(a.ULRedPkts, b.ULRedPkts), d(a.DLBytes, b.DLBytes), d(a.DLPkts, b.DLPkts)}
}
