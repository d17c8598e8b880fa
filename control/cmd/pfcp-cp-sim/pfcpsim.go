package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/omec-project/pfcpsim/pkg/pfcpsim"
	"github.com/wmnsk/go-pfcp/ie"
)

// runPfcpsim drives the function with omec-project's pfcpsim library (an
// independent PFCP client, pinned at v1.4.0) for the standard procedures:
// association, heartbeat, session establishment and deletion.  pfcpsim
// sends PDN type IPv4 and only PDR/FAR/QER/URR IEs -- no Traffic
// Endpoints, no BBF IEs -- so the sessions name the subscriber's access
// side with 3GPP IEs alone: an Ethernet Packet Filter (MAC, S-TAG, C-TAG)
// in the upstream PDR's PDI.  pfcpsim binds its address's port 8805.
func runPfcpsim(args []string) error {
	fs := flag.NewFlagSet("pfcpsim", flag.ExitOnError)
	upAddr := fs.String("upf", "", "the function's address (port 8805)")
	local := fs.String("local", "", "our address (pfcpsim binds port 8805 on it)")
	n := fs.Int("sessions", 10, "sessions to establish, then delete")
	offset := fs.Int("offset", 0, "first subscriber index")
	keep := fs.Bool("keep", false, "leave the sessions established (no deletion)")
	fs.Parse(args)
	if _, err := netip.ParseAddr(*local); err != nil {
		return fmt.Errorf("--local: %w", err)
	}
	c := pfcpsim.NewPFCPClient(*local)
	c.SetPFCPResponseTimeout(10 * time.Second)
	if err := c.ConnectN4(*upAddr); err != nil {
		return err
	}
	defer c.DisconnectN4()
	res := map[string]any{}
	if err := c.SetupAssociation(); err != nil {
		return fmt.Errorf("association: %w", err)
	}
	res["associated"] = true
	if err := c.SendAndRecvHeartbeat(); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	res["heartbeat"] = true
	var sessions []*pfcpsim.PFCPSession
	for i := 0; i < *n; i++ {
		s := benchSub(*offset + i)
		ue := ie.NewUEIPAddress(0x02, s.IPv4.String(), "", 0, 0)
		up := ie.NewCreatePDR(ie.NewPDRID(1), ie.NewPrecedence(100),
			ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceAccess),
				ie.NewEthernetPacketFilter(ie.NewMACAddress(s.MAC, nil, nil, nil),
					ie.NewSTAG(0x04, 0, 0, s.STag), ie.NewCTAG(0x04, 0, 0, s.CTag)), ue),
			ie.NewFARID(1), ie.NewQERID(1))
		down := ie.NewCreatePDR(ie.NewPDRID(2), ie.NewPrecedence(100),
			ie.NewPDI(ie.NewSourceInterface(ie.SrcInterfaceCore), ue), ie.NewFARID(2), ie.NewQERID(1))
		fars := []*ie.IE{
			ie.NewCreateFAR(ie.NewFARID(1), ie.NewApplyAction(0x02),
				ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceCore))),
			ie.NewCreateFAR(ie.NewFARID(2), ie.NewApplyAction(0x02),
				ie.NewForwardingParameters(ie.NewDestinationInterface(ie.DstInterfaceAccess))),
		}
		qer := ie.NewCreateQER(ie.NewQERID(1), ie.NewGateStatus(ie.GateStatusOpen, ie.GateStatusOpen),
			ie.NewMBR(s.ULMBR, s.DLMBR))
		sess, err := c.EstablishSession([]*ie.IE{up, down}, fars, []*ie.IE{qer}, nil)
		if err != nil {
			return fmt.Errorf("establishment %d: %w", i, err)
		}
		sessions = append(sessions, sess)
	}
	res["established"] = len(sessions)
	deleted := 0
	if !*keep {
		for i, s := range sessions {
			if err := c.DeleteSession(s); err != nil {
				return fmt.Errorf("deletion %d: %w", i, err)
			}
			deleted++
		}
	}
	res["deleted"] = deleted
	return json.NewEncoder(os.Stdout).Encode(res)
}
