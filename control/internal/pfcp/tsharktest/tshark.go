// Package tsharktest decodes PFCP and GTP-U with Wireshark's dissectors
// (tshark), an independent decoder for the tests: the octets under test
// are written to a pcap as UDP datagrams and tshark prints the fields.
package tsharktest

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Datagram is one UDP payload between two ports.
type Datagram struct {
	SrcPort, DstPort uint16
	Payload          []byte
}

// PFCP is a datagram on the PFCP port both ways (8805).
func PFCP(payload []byte) Datagram { return Datagram{8805, 8805, payload} }

// WritePcap writes the datagrams as Ethernet/IPv4/UDP frames between
// 198.18.0.1 and 198.18.0.2 and returns the file's path.
func WritePcap(t testing.TB, dgs []Datagram) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "capture.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(1700000000, 0)
	for i, d := range dgs {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1},
			DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP,
			SrcIP: net.IP{198, 18, 0, 1}, DstIP: net.IP{198, 18, 0, 2}}
		udp := &layers.UDP{SrcPort: layers.UDPPort(d.SrcPort), DstPort: layers.UDPPort(d.DstPort)}
		udp.SetNetworkLayerForChecksum(ip)
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
			eth, ip, udp, gopacket.Payload(d.Payload)); err != nil {
			t.Fatal(err)
		}
		ci := gopacket.CaptureInfo{Timestamp: ts.Add(time.Duration(i) * time.Millisecond),
			CaptureLength: len(buf.Bytes()), Length: len(buf.Bytes())}
		if err := w.WritePacket(ci, buf.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// Fields runs tshark over a pcap and returns, per packet that passes the
// display filter, each field's values (all occurrences, in order).
func Fields(t testing.TB, pcap, filter string, fields ...string) [][][]string {
	t.Helper()
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Fatalf("tshark is not installed (scripts/setup installs it): %v", err)
	}
	args := []string{"-r", pcap, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a",
		"-E", "aggregator=|"}
	if filter != "" {
		args = append(args, "-Y", filter)
	}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	cmd := exec.Command("tshark", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("tshark %v: %v\n%s", args, err, errb.String())
	}
	var rows [][][]string
	for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if line == "" {
			continue
		}
		var row [][]string
		for _, col := range strings.Split(line, "\t") {
			if col == "" {
				row = append(row, nil)
			} else {
				row = append(row, strings.Split(col, "|"))
			}
		}
		for len(row) < len(fields) {
			row = append(row, nil)
		}
		rows = append(rows, row)
	}
	return rows
}

// Problems lists the expert items of warning severity or worse (malformed
// packets, undecoded data, wrong lengths) tshark reports in the pcap.
func Problems(t testing.TB, pcap string) []string {
	t.Helper()
	rows := Fields(t, pcap, "_ws.malformed || _ws.expert.severity >= 0x00600000",
		"frame.number", "_ws.expert.message", "_ws.malformed")
	var out []string
	for _, r := range rows {
		out = append(out, strings.Join(r[0], ",")+": "+strings.Join(r[1], "; ")+" "+strings.Join(r[2], ","))
	}
	return out
}
