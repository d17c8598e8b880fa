package bbf_test

import (
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/wmnsk/go-pfcp/ie"
	"github.com/wmnsk/go-pfcp/message"

	"edgeplane/control/internal/pfcp/bbf"
	"edgeplane/control/internal/pfcp/tsharktest"
)

// Each case: an IE as we encode it, its octets, and the pfcp.bbf.* fields
// tshark must decode from those octets.
var cases = []struct {
	name   string
	ie     *ie.IE
	octets string
	fields map[string]string
	parse  func(*ie.IE) (any, error)
	value  any
}{
	{"up_function_features_pppoe_ipoe", bbf.NewUPFunctionFeatures(bbf.FeaturePPPoE | bbf.FeatureIPoE),
		"8000 0006 0de9 03000000",
		map[string]string{"pfcp.bbf.up_function_features.pppoe": "1", "pfcp.bbf.up_function_features.ipoe": "1",
			"pfcp.bbf.up_function_features.lac": "0", "pfcp.bbf.up_function_features.lns": "0",
			"pfcp.bbf.up_function_features.lcp_keepalive_offload": "0"},
		func(i *ie.IE) (any, error) { return bbf.ParseUPFunctionFeatures(i) }, uint8(3)},
	{"logical_port_name", bbf.NewLogicalPort("access"),
		"8001 0008 0de9 616363657373",
		map[string]string{"pfcp.bbf.logical_port_id_str": "access"},
		func(i *ie.IE) (any, error) { return bbf.ParseLogicalPort(i) }, "access"},
	{"outer_header_creation_traffic_endpoint", bbf.NewOuterHeaderCreation(bbf.OHC{Description: bbf.OHCTrafficEndpoint}),
		"8002 0008 0de9 0200 0000 0000",
		map[string]string{"pfcp.bbf.outer_hdr_desc": "512"},
		func(i *ie.IE) (any, error) { return bbf.ParseOuterHeaderCreation(i) }, bbf.OHC{Description: 0x200}},
	{"outer_header_creation_cpr_nsh", bbf.NewOuterHeaderCreation(bbf.OHC{Description: bbf.OHCCPRNSH}),
		"8002 0008 0de9 0100 0000 0000",
		map[string]string{"pfcp.bbf.outer_hdr_desc": "256"},
		func(i *ie.IE) (any, error) { return bbf.ParseOuterHeaderCreation(i) }, bbf.OHC{Description: 0x100}},
	{"outer_header_removal_pppoe_ethernet", bbf.NewOuterHeaderRemoval(bbf.OHRPPPoEEthernet),
		"8003 0003 0de9 02",
		map[string]string{"pfcp.bbf.out_hdr_desc": "2"},
		func(i *ie.IE) (any, error) { return bbf.ParseOuterHeaderRemoval(i) }, uint8(2)},
	{"pppoe_session_id", bbf.NewPPPoESessionID(0x1234),
		"8004 0004 0de9 1234",
		map[string]string{"pfcp.bbf.pppoe_session_id": "0x1234"},
		func(i *ie.IE) (any, error) { return bbf.ParsePPPoESessionID(i) }, uint16(0x1234)},
	{"ppp_protocol_control", bbf.NewPPPProtocol(bbf.PPPProto{Flags: bbf.PPPControl}),
		"8005 0003 0de9 04",
		map[string]string{"pfcp.bbf.protocol_flags.control": "1", "pfcp.bbf.protocol_flags.data": "0",
			"pfcp.bbf.protocol_flags.specific": "0"},
		func(i *ie.IE) (any, error) { return bbf.ParsePPPProtocol(i) }, bbf.PPPProto{Flags: 4}},
	{"ppp_protocol_specific_lcp", bbf.NewPPPProtocol(bbf.PPPProto{Flags: bbf.PPPSpecific | bbf.PPPControl, Protocol: 0xc021}),
		"8005 0005 0de9 05 c021",
		map[string]string{"pfcp.bbf.protocol_flags.specific": "1", "pfcp.bbf.protocol_flags.protocol": "0xc021"},
		func(i *ie.IE) (any, error) { return bbf.ParsePPPProtocol(i) }, bbf.PPPProto{Flags: 5, Protocol: 0xc021}},
	{"verification_timers", bbf.NewVerificationTimers(bbf.VerifTimers{Interval: 30, Count: 3}),
		"8006 0005 0de9 001e 03",
		map[string]string{"pfcp.bbf.verification_timer.interval": "30", "pfcp.bbf.verification_timer.count": "3"},
		func(i *ie.IE) (any, error) { return bbf.ParseVerificationTimers(i) }, bbf.VerifTimers{30, 3}},
	{"lcp_magic_number", bbf.NewPPPLCPMagicNumber(bbf.Magic{Tx: 0x11223344, Rx: 0x55667788}),
		"8007 000a 0de9 11223344 55667788",
		map[string]string{"pfcp.bbf.lcp_magic_number.tx": "0x11223344", "pfcp.bbf.lcp_magic_number.rx": "0x55667788"},
		func(i *ie.IE) (any, error) { return bbf.ParsePPPLCPMagicNumber(i) }, bbf.Magic{0x11223344, 0x55667788}},
	{"mtu", bbf.NewMTU(1492),
		"8008 0004 0de9 05d4",
		map[string]string{"pfcp.bbf.mtu": "1492"},
		func(i *ie.IE) (any, error) { return bbf.ParseMTU(i) }, uint16(1492)},
	{"ppp_lcp_connectivity_grouped", bbf.NewPPPLCPConnectivity(
		bbf.NewVerificationTimers(bbf.VerifTimers{Interval: 10, Count: 5}),
		bbf.NewPPPLCPMagicNumber(bbf.Magic{Tx: 1, Rx: 2})),
		"800c 0019 0de9 8006 0005 0de9 000a 05 8007 000a 0de9 00000001 00000002",
		map[string]string{"pfcp.bbf.verification_timer.interval": "10", "pfcp.bbf.verification_timer.count": "5",
			"pfcp.bbf.lcp_magic_number.tx": "0x00000001", "pfcp.bbf.lcp_magic_number.rx": "0x00000002"},
		func(i *ie.IE) (any, error) {
			ch, err := bbf.Children(i)
			if err != nil {
				return nil, err
			}
			v, err := bbf.ParseVerificationTimers(ch[0])
			return v, err
		}, bbf.VerifTimers{10, 5}},
}

func unhex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBBFIEsEncodeToTheseOctets(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.ie.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if want := unhex(t, c.octets); string(got) != string(want) {
				t.Fatalf("octets %x, want %x", got, want)
			}
		})
	}
}

func TestBBFIEsDecodeFromTheseOctets(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			i, err := ie.Parse(unhex(t, c.octets))
			if err != nil {
				t.Fatal(err)
			}
			v, err := c.parse(i)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(v, c.value) {
				t.Fatalf("decoded %#v, want %#v", v, c.value)
			}
		})
	}
}

// Each case's octets in a Session Establishment Request: tshark's PFCP
// dissector (TR-459 enterprise IEs) must show the expected fields and
// report nothing malformed.
func TestTsharkDecodesTheOctetsToTheBBFFields(t *testing.T) {
	var dgs []tsharktest.Datagram
	for i, c := range cases {
		raw, err := ie.Parse(unhex(t, c.octets))
		if err != nil {
			t.Fatal(err)
		}
		m := message.NewSessionEstablishmentRequest(0, 0, 0, uint32(i+1), 0,
			ie.NewNodeID("198.18.0.1", "", ""), raw)
		b, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		dgs = append(dgs, tsharktest.PFCP(b))
	}
	pcap := tsharktest.WritePcap(t, dgs)
	if p := tsharktest.Problems(t, pcap); len(p) != 0 {
		t.Fatalf("tshark reports problems: %v", p)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var names []string
			for f := range c.fields {
				names = append(names, f)
			}
			rows := tsharktest.Fields(t, pcap, "pfcp.seqno == "+itoa(i+1), names...)
			if len(rows) != 1 {
				t.Fatalf("%d packets with sequence %d", len(rows), i+1)
			}
			for k, f := range names {
				if len(rows[0][k]) == 0 || rows[0][k][0] != c.fields[f] {
					t.Errorf("%s = %v, want %s", f, rows[0][k], c.fields[f])
				}
			}
		})
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestBBFIEsWithWrongLengthsAreRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		octets string
		parse  func(*ie.IE) error
	}{
		{"pppoe_session_id_one_octet", "8004 0003 0de9 12",
			func(i *ie.IE) error { _, err := bbf.ParsePPPoESessionID(i); return err }},
		{"pppoe_session_id_three_octets", "8004 0005 0de9 123456",
			func(i *ie.IE) error { _, err := bbf.ParsePPPoESessionID(i); return err }},
		{"mtu_empty", "8008 0002 0de9",
			func(i *ie.IE) error { _, err := bbf.ParseMTU(i); return err }},
		{"ppp_protocol_specific_without_protocol", "8005 0003 0de9 01",
			func(i *ie.IE) error { _, err := bbf.ParsePPPProtocol(i); return err }},
		{"verification_timers_short", "8006 0004 0de9 001e",
			func(i *ie.IE) error { _, err := bbf.ParseVerificationTimers(i); return err }},
		{"magic_short", "8007 0009 0de9 11223344 556677",
			func(i *ie.IE) error { _, err := bbf.ParsePPPLCPMagicNumber(i); return err }},
		{"logical_port_empty", "8001 0002 0de9",
			func(i *ie.IE) error { _, err := bbf.ParseLogicalPort(i); return err }},
		{"lcp_connectivity_child_runs_past_parent", "800c 0009 0de9 8006 0009 0de9 000a",
			func(i *ie.IE) error { _, err := bbf.Children(i); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			i, err := ie.Parse(unhex(t, c.octets))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.parse(i); err == nil {
				t.Fatalf("%s accepted", c.octets)
			} else if c.name != "lcp_connectivity_child_runs_past_parent" && !errors.Is(err, bbf.ErrLength) {
				t.Fatalf("error %v is not a length error", err)
			}
		})
	}
}

func TestAnotherEnterprisesIEIsNotBBF(t *testing.T) {
	i := ie.NewVendorSpecificIE(bbf.PPPoESessionID, 10415, []byte{0, 1})
	if bbf.IsBBF(i) {
		t.Fatal("3GPP's enterprise taken for the Broadband Forum")
	}
	if _, err := bbf.ParsePPPoESessionID(i); err == nil {
		t.Fatal("parsed another enterprise's IE as a PPPoE Session ID")
	}
}

func TestPPPProtocolSelection(t *testing.T) {
	control := bbf.PPPProto{Flags: bbf.PPPControl}
	data := bbf.PPPProto{Flags: bbf.PPPData}
	lcp := bbf.PPPProto{Flags: bbf.PPPSpecific, Protocol: 0xc021}
	for _, c := range []struct {
		p     bbf.PPPProto
		proto uint16
		want  bool
	}{
		{control, 0xc021, true}, {control, 0xc023, true}, {control, 0x8021, true}, {control, 0x0021, false},
		{data, 0x0021, true}, {data, 0x0057, true}, {data, 0xc021, false},
		{lcp, 0xc021, true}, {lcp, 0xc223, false},
	} {
		if got := c.p.Matches(c.proto); got != c.want {
			t.Errorf("%+v matches %#04x = %v, want %v", c.p, c.proto, got, c.want)
		}
	}
}

// The oracle can fail: a one-octet BBF UP Function Features (TR-459 gives
// it three spare octets after the flags) is reported as malformed.
func TestTsharkFlagsAShortBBFUPFunctionFeatures(t *testing.T) {
	raw := ie.NewVendorSpecificIE(bbf.UPFunctionFeatures, bbf.EnterpriseID, []byte{3})
	m := message.NewAssociationSetupResponse(1, ie.NewNodeID("198.18.0.1", "", ""),
		ie.NewCause(ie.CauseRequestAccepted), raw)
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if p := tsharktest.Problems(t, tsharktest.WritePcap(t, []tsharktest.Datagram{tsharktest.PFCP(b)})); len(p) == 0 {
		t.Fatal("tshark found nothing wrong with a 1-octet BBF UP Function Features")
	}
}
