package upf

import (
	"net"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/wmnsk/go-pfcp/ie"

	"edgeplane/control/internal/dpctl"
	"edgeplane/control/internal/pfcp/bbf"
	"edgeplane/control/internal/pfcp/cpsim"
)

// The session translation table: each named PFCP request (the IEs a
// control plane sends) becomes the expected data-plane subscriber, or is
// refused with the expected cause and offending IE.

var testEnv = &Env{Ports: []string{"access"}, NetworkInstances: []string{"internet"}, Profiles: NewProfiles(128)}

func sessionOf(t *testing.T, pdn uint8, ies []*ie.IE) (*Session, *Reject) {
	t.Helper()
	// Through the wire encoding, as a request arrives.
	var body []byte
	for _, i := range ies {
		b, err := i.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		body = append(body, b...)
	}
	parsed, err := ie.ParseMultiIEs(body)
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(0x42, time.Unix(0, 0))
	s.PDNType = pdn
	var p parser
	for _, c := range parsed {
		if rj := p.topLevel(c.Type, c, true); rj != nil {
			return nil, rj
		}
	}
	if rj := p.rules(s, parsed, time.Unix(0, 0)); rj != nil {
		return nil, rj
	}
	return s, nil
}

func mac(s string) net.HardwareAddr {
	m, _ := net.ParseMAC(s)
	return m
}

func TestTranslationTable(t *testing.T) {
	base := cpsim.Subscriber{STag: 100, CTag: 200, MAC: mac("02:00:00:00:10:01"),
		IPv4: netip.MustParseAddr("198.18.100.2"), IPv6: netip.MustParsePrefix("2001:db8:100::/56"),
		ULMBR: 20000, ULGBR: 10000, DLMBR: 100000}
	pppoe := base
	pppoe.PPPoE = 0x12
	pppoe.LogicalPort = "access"
	pppoe.NetworkInst = "internet"
	single := base
	single.STag, single.CTag = 0, 101
	single.ULMBR, single.ULGBR, single.DLMBR = 0, 0, 0
	std := base
	std.StandardOnly = true
	untagged := base
	untagged.STag, untagged.CTag = 0, 0
	untaggedStd := untagged
	untaggedStd.StandardOnly = true
	redirect := pppoe
	redirect.Redirect, redirect.CPAddr, redirect.CPTEID = true, netip.MustParseAddr("198.18.0.9"), 0x77
	for _, c := range []struct {
		name string
		pdn  uint8
		ies  []*ie.IE
		want *dpctl.Subscriber // nil: no subscriber
		up   int               // redirect rules UP->CP
		down int               // redirect tunnels CP->UP
	}{
		{"tr459_ipoe_qinq_dual_stack", ie.PDNTypeEthernet, base.Establishment(),
			&dpctl.Subscriber{QinQ: "100.200", MAC: "02:00:00:00:10:01", IPv4: []string{"198.18.100.2"},
				IPv6: "2001:db8:100::/56", Policer: "pfcp-u20000-10000", Pipe: "pfcp-d100000"}, 0, 0},
		{"tr459_pppoe_session_on_logical_port", ie.PDNTypeEthernet, pppoe.Establishment(),
			&dpctl.Subscriber{QinQ: "100.200", PPPoE: 0x12, MAC: "02:00:00:00:10:01", IPv4: []string{"198.18.100.2"},
				IPv6: "2001:db8:100::/56", Policer: "pfcp-u20000-10000", Pipe: "pfcp-d100000"}, 0, 0},
		{"single_c_tag_no_qer", ie.PDNTypeEthernet, single.Establishment(),
			&dpctl.Subscriber{VLAN: 101, MAC: "02:00:00:00:10:01", IPv4: []string{"198.18.100.2"},
				IPv6: "2001:db8:100::/56"}, 0, 0},
		{"standard_ies_only_ethernet_packet_filter", ie.PDNTypeIPv4v6, std.Establishment(),
			&dpctl.Subscriber{QinQ: "100.200", MAC: "02:00:00:00:10:01", IPv4: []string{"198.18.100.2"},
				IPv6: "2001:db8:100::/56", Policer: "pfcp-u20000-10000", Pipe: "pfcp-d100000"}, 0, 0},
		{"untagged_ipoe_keyed_by_mac", ie.PDNTypeEthernet, untagged.Establishment(),
			&dpctl.Subscriber{MAC: "02:00:00:00:10:01", IPv4: []string{"198.18.100.2"},
				IPv6: "2001:db8:100::/56", Policer: "pfcp-u20000-10000", Pipe: "pfcp-d100000"}, 0, 0},
		{"untagged_ipoe_mac_from_ethernet_packet_filter", ie.PDNTypeIPv4v6, untaggedStd.Establishment(),
			&dpctl.Subscriber{MAC: "02:00:00:00:10:01", IPv4: []string{"198.18.100.2"},
				IPv6: "2001:db8:100::/56", Policer: "pfcp-u20000-10000", Pipe: "pfcp-d100000"}, 0, 0},
		{"pppoe_with_control_redirect_both_ways", ie.PDNTypeEthernet, redirect.Establishment(),
			&dpctl.Subscriber{QinQ: "100.200", PPPoE: 0x12, MAC: "02:00:00:00:10:01", IPv4: []string{"198.18.100.2"},
				IPv6: "2001:db8:100::/56", Policer: "pfcp-u20000-10000", Pipe: "pfcp-d100000"}, 1, 1},
		{"default_session_catches_control_traffic", 0,
			cpsim.DefaultSession("access", netip.MustParseAddr("198.18.0.9"), 0x1000), nil, 5, 0},
		{"framed_route_adds_a_range", ie.PDNTypeEthernet, append(base.Establishment()[:0:0],
			withFramedRoute(base.Establishment(), "198.18.101.0/29 0.0.0.0 1")...),
			&dpctl.Subscriber{QinQ: "100.200", MAC: "02:00:00:00:10:01", IPv4: []string{"198.18.100.2", "198.18.101.0/29"},
				IPv6: "2001:db8:100::/56", Policer: "pfcp-u20000-10000", Pipe: "pfcp-d100000"}, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, rj := sessionOf(t, c.pdn, c.ies)
			if rj != nil {
				t.Fatal(rj)
			}
			p, rj := Translate(s, testEnv)
			if rj != nil {
				t.Fatal(rj)
			}
			if c.want == nil {
				if p.Sub != nil {
					t.Fatalf("a subscriber %+v, want none", p.Sub.Subscriber(1))
				}
			} else {
				if p.Sub == nil {
					t.Fatal("no subscriber")
				}
				got := p.Sub.Subscriber(c.want.ID)
				if !reflect.DeepEqual(got, *c.want) {
					t.Fatalf("subscriber\n got %+v\nwant %+v", got, *c.want)
				}
			}
			if len(p.CPRUp) != c.up || len(p.CPRDown) != c.down {
				t.Fatalf("redirect: %d rules up, %d tunnels down; want %d, %d", len(p.CPRUp), len(p.CPRDown), c.up, c.down)
			}
		})
	}
}

func withFramedRoute(ies []*ie.IE, route string) []*ie.IE {
	out := make([]*ie.IE, 0, len(ies))
	for _, i := range ies {
		if i.Type == ie.CreateTrafficEndpoint {
			if id, _ := i.TrafficEndpointID(); id == cpsim.TECore {
				i = ie.NewCreateTrafficEndpoint(append(append([]*ie.IE(nil), i.ChildIEs...), ie.NewFramedRoute(route))...)
			}
		}
		out = append(out, i)
	}
	return out
}

// replace swaps the first IE of type t (at any depth of the top level's
// children) by x; remove drops it.
func edit(ies []*ie.IE, f func(*ie.IE) *ie.IE) []*ie.IE {
	var out []*ie.IE
	for _, i := range ies {
		if n := f(i); n != nil {
			out = append(out, n)
		}
	}
	return out
}

func TestTranslationRefusals(t *testing.T) {
	good := cpsim.Subscriber{STag: 100, CTag: 200, MAC: mac("02:00:00:00:10:01"),
		IPv4: netip.MustParseAddr("198.18.100.2"), ULMBR: 20000, DLMBR: 50000, LogicalPort: "access"}
	untaggedNoMAC := good
	untaggedNoMAC.STag, untaggedNoMAC.CTag, untaggedNoMAC.MAC = 0, 0, nil
	otherPort := good
	otherPort.LogicalPort = "ge-0/0/1"
	noMAC := good
	noMAC.MAC = nil
	for _, c := range []struct {
		name    string
		ies     []*ie.IE
		cause   uint8
		offends uint16
	}{
		{"create_bar_not_supported", append(good.Establishment(), ie.NewCreateBAR(ie.NewBARID(1))),
			ie.CauseServiceNotSupported, ie.CreateBAR},
		{"lcp_keepalive_offload_not_offered", append(good.Establishment(), bbf.NewPPPLCPConnectivity(
			bbf.NewVerificationTimers(bbf.VerifTimers{Interval: 30, Count: 3}))),
			ie.CauseServiceNotSupported, bbf.PPPLCPConnectivity},
		{"l2tp_tunnel_not_supported", append(good.Establishment(), ie.NewVendorSpecificIE(bbf.L2TPTunnel, bbf.EnterpriseID, nil)),
			ie.CauseServiceNotSupported, bbf.L2TPTunnel},
		{"untagged_ipoe_without_mac_has_no_access_key", untaggedNoMAC.Establishment(), ie.CauseConditionalIEMissing, ie.MACAddress},
		{"logical_port_not_served", otherPort.Establishment(), ie.CauseRuleCreationModificationFailure, bbf.LogicalPort},
		{"ipoe_without_mac", noMAC.Establishment(), ie.CauseConditionalIEMissing, ie.MACAddress},
		{"closed_gate", edit(good.Establishment(), func(i *ie.IE) *ie.IE {
			if i.Type == ie.CreateQER {
				return ie.NewCreateQER(ie.NewQERID(cpsim.QERID), ie.NewGateStatus(ie.GateStatusClosed, ie.GateStatusOpen))
			}
			return i
		}), ie.CauseServiceNotSupported, ie.GateStatus},
		{"mbr_beyond_range", edit(good.Establishment(), func(i *ie.IE) *ie.IE {
			if i.Type == ie.CreateQER {
				return ie.NewCreateQER(ie.NewQERID(cpsim.QERID), ie.NewMBR(1<<39, 0))
			}
			return i
		}), ie.CauseMandatoryIEIncorrect, ie.MBR},
		{"pdr_names_missing_far", edit(good.Establishment(), func(i *ie.IE) *ie.IE {
			if i.Type == ie.CreateFAR {
				if id, _ := i.FARID(); id == cpsim.FARToCore {
					return nil
				}
			}
			return i
		}), ie.CauseRuleCreationModificationFailure, ie.FARID},
		{"pdr_without_precedence", edit(good.Establishment(), func(i *ie.IE) *ie.IE {
			if i.Type == ie.CreatePDR {
				return ie.NewCreatePDR(ie.NewPDRID(9), ie.NewPDI(ie.NewSourceInterface(0)), ie.NewFARID(cpsim.FARToCore))
			}
			return i
		}), ie.CauseMandatoryIEMissing, ie.Precedence},
		{"vlan_4095_out_of_range", edit(good.Establishment(), func(i *ie.IE) *ie.IE {
			if i.Type == ie.CreateTrafficEndpoint {
				return ie.NewCreateTrafficEndpoint(ie.NewTrafficEndpointID(9), ie.New(ie.STAG, []byte{4, 0x0f, 0xff}))
			}
			return i
		}), ie.CauseMandatoryIEIncorrect, ie.STAG},
		{"reserved_pppoe_session", edit(good.Establishment(), func(i *ie.IE) *ie.IE {
			if i.Type == ie.CreateTrafficEndpoint {
				return ie.NewCreateTrafficEndpoint(ie.NewTrafficEndpointID(9), bbf.NewPPPoESessionID(0xffff))
			}
			return i
		}), ie.CauseMandatoryIEIncorrect, bbf.PPPoESessionID},
		{"volume_quota_not_supported", append(good.Establishment(), ie.NewCreateURR(ie.NewURRID(5),
			ie.NewMeasurementMethod(0, 1, 0), ie.NewReportingTriggers(0, 0x01, 0), ie.NewVolumeQuota(1, 1000, 0, 0))),
			ie.CauseServiceNotSupported, ie.VolumeQuota},
		{"buffering_far", append(good.Establishment(), ie.NewCreateFAR(ie.NewFARID(9), ie.NewApplyAction(0x04))),
			ie.CauseServiceNotSupported, ie.ApplyAction},
		{"ue_ip_choose", edit(good.Establishment(), func(i *ie.IE) *ie.IE {
			if i.Type == ie.CreateTrafficEndpoint {
				return ie.NewCreateTrafficEndpoint(ie.NewTrafficEndpointID(9), ie.New(ie.UEIPAddress, []byte{0x12}))
			}
			return i
		}), ie.CauseServiceNotSupported, ie.UEIPAddress},
		{"unknown_ie_type_is_ignored", append(good.Establishment(), ie.New(9999, []byte{1, 2, 3})), 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, rj := sessionOf(t, ie.PDNTypeEthernet, c.ies)
			if rj == nil {
				_, rj = Translate(s, testEnv)
			}
			if c.cause == 0 {
				if rj != nil {
					t.Fatalf("refused: %v", rj)
				}
				return
			}
			if rj == nil {
				t.Fatal("accepted")
			}
			if rj.Cause != c.cause || rj.IE != c.offends {
				t.Fatalf("cause %d offending %d (%s); want cause %d offending %d", rj.Cause, rj.IE, rj.Msg, c.cause, c.offends)
			}
		})
	}
}

// TestSubscriberTexts: the sub-add fields a plan becomes, cut from one
// buffer, are the texts fmt and the addresses' String write.
func TestSubscriberTexts(t *testing.T) {
	pp := func(s ...string) (out []netip.Prefix) {
		for _, x := range s {
			out = append(out, netip.MustParsePrefix(x))
		}
		return
	}
	for _, c := range []struct {
		name string
		sp   SubPlan
		want dpctl.Subscriber
	}{
		{"qinq, an address and a prefix", SubPlan{Key: AccessKey{STag: 100, CTag: 4000, MAC: "02:00:00:00:00:01"},
			Addrs: pp("198.18.0.1/32", "2001:db8:100::/56")},
			dpctl.Subscriber{ID: 7, QinQ: "100.4000", MAC: "02:00:00:00:00:01", IPv4: []string{"198.18.0.1"}, IPv6: "2001:db8:100::/56"}},
		{"one tag, ranges", SubPlan{Key: AccessKey{CTag: 12, PPPoE: 3, MAC: "02:00:00:00:00:02"},
			Addrs: pp("198.18.0.0/30", "198.19.0.9/32")},
			dpctl.Subscriber{ID: 7, VLAN: 12, PPPoE: 3, MAC: "02:00:00:00:00:02", IPv4: []string{"198.18.0.0/30", "198.19.0.9"}}},
		{"untagged, IPv6 only, profiles", SubPlan{Key: AccessKey{MAC: "02:00:00:00:00:03"}, Addrs: pp("2001:db8::/64"),
			Policer: &PolicerProfile{Name: "pfcp-u1-0"}, Pipe: &PipeProfile{Name: "pfcp-d2"}},
			dpctl.Subscriber{ID: 7, MAC: "02:00:00:00:00:03", IPv6: "2001:db8::/64", Policer: "pfcp-u1-0", Pipe: "pfcp-d2"}},
		{"longer than the buffer", SubPlan{Key: AccessKey{STag: 4094, CTag: 4094, MAC: "02:00:00:00:00:04"},
			Addrs: pp("255.255.255.254/31", "255.255.255.252/30", "255.255.255.248/29", "255.255.255.240/28",
				"2001:db8:ffff:ffff::/64")},
			dpctl.Subscriber{ID: 7, QinQ: "4094.4094", MAC: "02:00:00:00:00:04",
				IPv4: []string{"255.255.255.254/31", "255.255.255.252/30", "255.255.255.248/29", "255.255.255.240/28"},
				IPv6: "2001:db8:ffff:ffff::/64"}},
	} {
		if got := c.sp.Subscriber(7); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}
