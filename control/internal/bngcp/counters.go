package bngcp

import (
	"sync/atomic"
)

// Per-protocol counters, declared once: each newCounter line is the
// counter's name on the API (GET /v1/bng/counters: {protocol: {event: n}})
// and its labels in Prometheus
// (edgeplane_bngcp_protocol_events_total{protocol=, event=}).

type counter int

type counterDef struct{ proto, event string }

var counterDefs []counterDef

func newCounter(proto, event string) counter {
	counterDefs = append(counterDefs, counterDef{proto, event})
	return counter(len(counterDefs) - 1)
}

var (
	cAccessRx          = newCounter("access", "frames_rx")
	cAccessTx          = newCounter("access", "frames_tx")
	cAccessMalformed   = newCounter("access", "malformed")
	cAccessEtherType   = newCounter("access", "unhandled_ethertype")
	cAccessSendErr     = newCounter("access", "send_errors")
	cAccessUnknownPort = newCounter("access", "unknown_port")
	cAccessQueueFull   = newCounter("access", "queue_full")

	cPADIRx           = newCounter("pppoe", "padi_rx")
	cPADOTx           = newCounter("pppoe", "pado_tx")
	cPADRRx           = newCounter("pppoe", "padr_rx")
	cPADSTx           = newCounter("pppoe", "pads_tx")
	cPADTRx           = newCounter("pppoe", "padt_rx")
	cPADTTx           = newCounter("pppoe", "padt_tx")
	cPPPoEMalformed   = newCounter("pppoe", "malformed")
	cPPPoEBadCookie   = newCounter("pppoe", "bad_cookie")
	cPPPoENoService   = newCounter("pppoe", "service_unavailable")
	cPPPoERateLimited = newCounter("pppoe", "ratelimited")
	cPPPoEUnknownSess = newCounter("pppoe", "unknown_session")
	cPPPoEFull        = newCounter("pppoe", "no_session_id")
	cPPPoEUnexpected  = newCounter("pppoe", "unexpected_code")
	cPPPoEDupPADR     = newCounter("pppoe", "padr_retransmitted")

	cLCPRx          = newCounter("lcp", "rx")
	cLCPTx          = newCounter("lcp", "tx")
	cLCPEchoReqTx   = newCounter("lcp", "echo_request_tx")
	cLCPEchoReplyRx = newCounter("lcp", "echo_reply_rx")
	cLCPEchoReqRx   = newCounter("lcp", "echo_request_rx")
	cLCPKeepalive   = newCounter("lcp", "keepalive_expired")
	cLCPMalformed   = newCounter("lcp", "malformed")
	cLCPProtoRejTx  = newCounter("lcp", "protocol_reject_tx")
	cLCPProtoRejRx  = newCounter("lcp", "protocol_reject_rx")
	cLCPOpened      = newCounter("lcp", "opened")

	cPAPRequestRx = newCounter("pap", "request_rx")
	cPAPAckTx     = newCounter("pap", "ack_tx")
	cPAPNakTx     = newCounter("pap", "nak_tx")
	cPAPMalformed = newCounter("pap", "malformed")

	cCHAPChallengeTx = newCounter("chap", "challenge_tx")
	cCHAPResponseRx  = newCounter("chap", "response_rx")
	cCHAPSuccessTx   = newCounter("chap", "success_tx")
	cCHAPFailureTx   = newCounter("chap", "failure_tx")
	cCHAPMalformed   = newCounter("chap", "malformed")
	cAuthTimeout     = newCounter("chap", "auth_timeout")

	cIPCPRx     = newCounter("ipcp", "rx")
	cIPCPTx     = newCounter("ipcp", "tx")
	cIPCPOpened = newCounter("ipcp", "opened")
	cIPCPBad    = newCounter("ipcp", "malformed")

	cIPv6CPRx     = newCounter("ipv6cp", "rx")
	cIPv6CPTx     = newCounter("ipv6cp", "tx")
	cIPv6CPOpened = newCounter("ipv6cp", "opened")
	cIPv6CPBad    = newCounter("ipv6cp", "malformed")

	cDHCPDiscover    = newCounter("dhcp", "discover_rx")
	cDHCPOffer       = newCounter("dhcp", "offer_tx")
	cDHCPRequest     = newCounter("dhcp", "request_rx")
	cDHCPAck         = newCounter("dhcp", "ack_tx")
	cDHCPNak         = newCounter("dhcp", "nak_tx")
	cDHCPRelease     = newCounter("dhcp", "release_rx")
	cDHCPDecline     = newCounter("dhcp", "decline_rx")
	cDHCPInform      = newCounter("dhcp", "inform_rx")
	cDHCPMalformed   = newCounter("dhcp", "malformed")
	cDHCPRateLimited = newCounter("dhcp", "ratelimited")
	cDHCPLineBusy    = newCounter("dhcp", "line_busy")
	cDHCPExpired     = newCounter("dhcp", "lease_expired")
	cDHCPIgnored     = newCounter("dhcp", "ignored")
	cDHCPOption82    = newCounter("dhcp", "option82_rx")

	cDHCP6Solicit     = newCounter("dhcpv6", "solicit_rx")
	cDHCP6Advertise   = newCounter("dhcpv6", "advertise_tx")
	cDHCP6Request     = newCounter("dhcpv6", "request_rx")
	cDHCP6Reply       = newCounter("dhcpv6", "reply_tx")
	cDHCP6Renew       = newCounter("dhcpv6", "renew_rx")
	cDHCP6Rebind      = newCounter("dhcpv6", "rebind_rx")
	cDHCP6Release     = newCounter("dhcpv6", "release_rx")
	cDHCP6Confirm     = newCounter("dhcpv6", "confirm_rx")
	cDHCP6InfoReq     = newCounter("dhcpv6", "information_request_rx")
	cDHCP6Decline     = newCounter("dhcpv6", "decline_rx")
	cDHCP6Malformed   = newCounter("dhcpv6", "malformed")
	cDHCP6RateLimited = newCounter("dhcpv6", "ratelimited")
	cDHCP6Ignored     = newCounter("dhcpv6", "ignored")
	cDHCP6Expired     = newCounter("dhcpv6", "lease_expired")

	cNDRS        = newCounter("nd", "rs_rx")
	cNDRA        = newCounter("nd", "ra_tx")
	cNDNS        = newCounter("nd", "ns_rx")
	cNDNA        = newCounter("nd", "na_tx")
	cNDMalformed = newCounter("nd", "malformed")
	cNDIgnored   = newCounter("nd", "ignored")

	cARPRequest   = newCounter("arp", "request_rx")
	cARPReply     = newCounter("arp", "reply_tx")
	cARPMalformed = newCounter("arp", "malformed")
	cARPIgnored   = newCounter("arp", "ignored")

	cAuthAccept  = newCounter("aaa", "accept")
	cAuthReject  = newCounter("aaa", "reject")
	cAuthError   = newCounter("aaa", "error")
	cAcctStart   = newCounter("aaa", "acct_start")
	cAcctInterim = newCounter("aaa", "acct_interim")
	cAcctStop    = newCounter("aaa", "acct_stop")
	cCoAChange   = newCounter("aaa", "coa_change")
	cCoAKick     = newCounter("aaa", "coa_disconnect")

	cUPEstablish     = newCounter("pfcp", "session_establish")
	cUPEstablishFail = newCounter("pfcp", "session_establish_failed")
	cUPModify        = newCounter("pfcp", "session_modify")
	cUPModifyFail    = newCounter("pfcp", "session_modify_failed")
	cUPDelete        = newCounter("pfcp", "session_delete")
	cUPDeleteFail    = newCounter("pfcp", "session_delete_failed")
	cUPReport        = newCounter("pfcp", "usage_report")
	cUPCheck         = newCounter("pfcp", "resync_checked")          // sessions asked about after a restart
	cUPCheckLost     = newCounter("pfcp", "resync_lost")             // ... that the user plane did not have
	cUPCheckFail     = newCounter("pfcp", "resync_no_answer")        // ... that it did not answer about
	cRestoreEnding   = newCounter("pfcp", "resync_deletion_resumed") // restored while being deleted: deletion asked again

	cPoolExhausted  = newCounter("session", "pool_exhausted")
	cSessionLimit   = newCounter("session", "limit_reached")
	cSetupTimeout   = newCounter("session", "setup_timeout")
	cSessionTimeout = newCounter("session", "session_timeout")
)

// counters holds every counter's value; shards add to them concurrently.
type counters struct {
	v []atomic.Uint64
}

func newCounters() *counters { return &counters{v: make([]atomic.Uint64, len(counterDefs))} }

func (c *counters) inc(k counter)           { c.v[k].Add(1) }
func (c *counters) add(k counter, n uint64) { c.v[k].Add(n) }

// snapshot returns {protocol: {event: value}}.
func (c *counters) snapshot() map[string]map[string]uint64 {
	out := map[string]map[string]uint64{}
	for i, d := range counterDefs {
		m := out[d.proto]
		if m == nil {
			m = map[string]uint64{}
			out[d.proto] = m
		}
		m[d.event] = c.v[i].Load()
	}
	return out
}
