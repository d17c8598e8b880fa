package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// Traffic: every up subscriber sends UDP datagrams at a rate to a
// reflector on the core side, which sends each back; the emulator counts
// what each subscriber sent and got back (both directions' loss).  The
// payload carries the subscriber's index and a sequence number.

const trafficMagic = 0x454d5531 // "EMU1"

type traffic struct {
	pps   float64
	until time.Time
	dst   netip.AddrPort
	size  int
}

func (lp *loop) trafficTick(t *traffic, dt time.Duration, credit map[*sess]float64) {
	if t == nil || time.Now().After(t.until) {
		return
	}
	for _, s := range lp.subs {
		if s.st != stUp || !s.v4.IsValid() {
			continue
		}
		credit[s] += t.pps * dt.Seconds()
		for credit[s] >= 1 {
			credit[s]--
			lp.send(lp.datagram(s, t))
		}
	}
}

func (lp *loop) datagram(s *sess, t *traffic) []byte {
	p := make([]byte, max(t.size, 16))
	binary.BigEndian.PutUint32(p, trafficMagic)
	binary.BigEndian.PutUint32(p[4:], uint32(s.i))
	binary.BigEndian.PutUint64(p[8:], s.txPkts)
	s.txPkts++
	ip := udp4(s.v4, t.dst.Addr(), lp.e.cfg.trafficPort, t.dst.Port(), p)
	if lp.e.cfg.mode == "pppoe" {
		return pppFrame(lp.frameTo(s, s.ac, etSess), s.sid, pIPv4, ip)
	}
	return append(ethHeader(make([]byte, 0, 64+len(ip)), s.ac, s.mac, s.l, 0x0800), ip...)
}

func (lp *loop) trafficIn(s *sess, p ipPkt) {
	if len(p.payload) < 16 || binary.BigEndian.Uint32(p.payload) != trafficMagic ||
		binary.BigEndian.Uint32(p.payload[4:]) != uint32(s.i) {
		return
	}
	s.rxPkts++
	s.rxBytes += uint64(len(p.payload))
}

// reflect is `subemu reflect -listen ADDR`: echo every datagram to its
// sender until SIGINT/SIGTERM, then print how many.
func reflect(addr string) error {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		return err
	}
	c.SetReadBuffer(16 << 20)
	c.SetWriteBuffer(16 << 20)
	var n atomic.Uint64
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		c.Close()
	}()
	buf := make([]byte, 65536)
	for {
		k, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			break
		}
		n.Add(1)
		c.WriteToUDPAddrPort(buf[:k], from)
	}
	fmt.Printf(`{"event":"reflected","datagrams":%d}`+"\n", n.Load())
	return nil
}
