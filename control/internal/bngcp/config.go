package bngcp

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"edgeplane/control/internal/bngcp/frame"
)

// Config is the control plane's configuration file (YAML; unknown keys
// are errors).  docs/bng-control.md shows a complete one.
type Config struct {
	NodeID   string          `yaml:"node_id"`   // PFCP Node ID (an address or a name)
	StateDir string          `yaml:"state_dir"` // the session store
	Shards   int             `yaml:"shards"`    // event loops (default: GOMAXPROCS)
	Access   AccessConfig    `yaml:"access"`
	Ports    []PortConfig    `yaml:"ports"`
	PFCP     PFCPConfig      `yaml:"pfcp"`
	PPPoE    PPPoEConfig     `yaml:"pppoe"`
	IPoE     IPoEConfig      `yaml:"ipoe"`
	IPv6     IPv6Config      `yaml:"ipv6"`
	Pools    []PoolConfig    `yaml:"pools"`
	Profiles []ProfileConfig `yaml:"profiles"`
	AAA      AAAConfig       `yaml:"aaa"`
	Limits   LimitsConfig    `yaml:"limits"`
	API      APIConfig       `yaml:"api"`
}

// AccessConfig says how subscribers' control frames arrive.
type AccessConfig struct {
	// Mode "cpr": redirected by the user planes in GTP-U (TR-459's
	// control packet redirect); "direct": read from a Linux interface
	// (a BNG without a separate user plane, and the lab's protocol tests).
	Mode  string `yaml:"mode"`
	Iface string `yaml:"iface"` // direct: the interface
	GTPU  string `yaml:"gtpu"`  // cpr: our GTP-U address (host:port, port 2152)
}

// PortConfig is one logical port (TR-459): the BNG's access MAC there (the
// subscribers' gateway: source of every frame we send) and the user plane
// that serves it.
type PortConfig struct {
	Name      string `yaml:"name"`
	MAC       string `yaml:"mac"`
	UserPlane string `yaml:"user_plane"` // a pfcp.user_planes name ("" in direct mode without PFCP)
	mac       frame.MAC
}

// PFCPConfig is the SCi side: our PFCP endpoint and the user planes.
type PFCPConfig struct {
	Listen     string            `yaml:"listen"` // host:port (8805)
	UserPlanes []UserPlaneConfig `yaml:"user_planes"`
	Heartbeat  time.Duration     `yaml:"heartbeat"`
	T1         time.Duration     `yaml:"t1"` // retransmission timer
	N1         int               `yaml:"n1"` // retransmissions
}

// UserPlaneConfig names one user plane.
type UserPlaneConfig struct {
	Name            string `yaml:"name"`
	Address         string `yaml:"address"` // its PFCP host:port
	NetworkInstance string `yaml:"network_instance"`
}

// PPPoEConfig configures discovery and PPP.
type PPPoEConfig struct {
	Enabled      *bool         `yaml:"enabled"`
	ACName       string        `yaml:"ac_name"`
	ServiceNames []string      `yaml:"service_names"` // offered; "" (any) accepted when listed or when the list is empty
	MRU          uint16        `yaml:"mru"`
	Auth         []string      `yaml:"auth"` // pap, chap (order of preference)
	Keepalive    time.Duration `yaml:"keepalive"`
	KeepaliveMax int           `yaml:"keepalive_failures"`
	Restart      time.Duration `yaml:"restart_timer"`
	AuthTimeout  time.Duration `yaml:"auth_timeout"`
	SetupTimeout time.Duration `yaml:"setup_timeout"`
	IPv6         *bool         `yaml:"ipv6"` // IPv6CP, RA and DHCPv6-PD over the session
	MaxPerMAC    int           `yaml:"max_sessions_per_mac"`
}

// IPoEConfig configures DHCP subscribers.
type IPoEConfig struct {
	Enabled     *bool         `yaml:"enabled"`
	Lease       time.Duration `yaml:"lease"`
	Username    string        `yaml:"username"` // mac | circuit-id | remote-id | line
	Password    string        `yaml:"password"`
	DHCPv6      *bool         `yaml:"dhcpv6"`
	OfferHold   time.Duration `yaml:"offer_hold"` // an offer not requested is forgotten after this
	RapidCommit bool          `yaml:"rapid_commit"`
}

// IPv6Config is what IPv6 subscribers are told.
type IPv6Config struct {
	RAInterval time.Duration `yaml:"ra_interval"`
	RALifetime time.Duration `yaml:"ra_lifetime"`
	Valid      time.Duration `yaml:"valid_lifetime"`
	Preferred  time.Duration `yaml:"preferred_lifetime"`
	DNS        []string      `yaml:"dns"`
	MTU        uint32        `yaml:"mtu"`
	dns        []netip.Addr
}

// PoolConfig is an IPv4 range or an IPv6 prefix cut into blocks.
type PoolConfig struct {
	Name    string        `yaml:"name"`
	Range   string        `yaml:"range"`   // IPv4 first-last
	Gateway string        `yaml:"gateway"` // IPv4 gateway/len (the subnet the subscribers see)
	Prefix  string        `yaml:"prefix"`  // IPv6 prefix
	Block   int           `yaml:"block"`   // IPv6: block length per subscriber
	PD      int           `yaml:"pd"`      // IPv6: delegated prefix length (0: none)
	DNS     []string      `yaml:"dns"`
	Hold    time.Duration `yaml:"hold"`
}

// ProfileConfig is a subscriber profile: rates (bit/s; "100M" accepted)
// that become the session's QER (uplink policer: MBR/GBR, downlink HQoS
// pipe: MBR), and the ACL set it names.
type ProfileConfig struct {
	Name    string `yaml:"name"`
	UpMBR   string `yaml:"up_mbr"`
	UpGBR   string `yaml:"up_gbr"`
	DownMBR string `yaml:"down_mbr"`
	ACL     string `yaml:"acl"`
}

// Profile is a parsed ProfileConfig.
type Profile struct {
	Name                  string
	UpMBR, UpGBR, DownMBR uint64 // bit/s
	ACL                   string
}

// AAAConfig selects authentication and accounting.
type AAAConfig struct {
	Mode           string         `yaml:"mode"` // local | radius
	LocalFile      string         `yaml:"local_file"`
	AcceptUnknown  bool           `yaml:"accept_unknown_ipoe"`
	DefaultProfile string         `yaml:"default_profile"`
	DefaultPool4   string         `yaml:"default_pool"`
	DefaultPool6   string         `yaml:"default_pool6"`
	AcctFile       string         `yaml:"accounting_file"` // local: JSON lines
	Interim        time.Duration  `yaml:"interim"`         // default Acct-Interim-Interval
	Radius         RadiusSettings `yaml:"radius"`
}

// RadiusSettings configures the RADIUS client and the CoA server.
type RadiusSettings struct {
	Servers       []RadiusServerConfig `yaml:"servers"`
	NASIdentifier string               `yaml:"nas_identifier"`
	NASIP         string               `yaml:"nas_ip"`
	Timeout       time.Duration        `yaml:"timeout"`
	Retry         time.Duration        `yaml:"retry"`
	CoAListen     string               `yaml:"coa_listen"`
	CoASecret     string               `yaml:"coa_secret"`
	CoAClients    []string             `yaml:"coa_clients"`
}

// RadiusServerConfig is one server.
type RadiusServerConfig struct {
	Auth   string `yaml:"auth"`
	Acct   string `yaml:"acct"`
	Secret string `yaml:"secret"`
}

// LimitsConfig bounds what the access side may cost us.
type LimitsConfig struct {
	MaxSessions     int     `yaml:"max_sessions"`
	NewPerSecond    float64 `yaml:"new_per_second"` // PADI + DISCOVER + SOLICIT from unknown subscribers, all shards
	NewBurst        int     `yaml:"new_burst"`
	PerMACPerSecond float64 `yaml:"per_mac_per_second"` // discovery from one MAC
}

// APIConfig is the REST API's listener (the agent's rules: unix socket
// 0660 by default; tcp needs a token or mutual TLS).
type APIConfig struct {
	Listen    string `yaml:"listen"`
	Group     string `yaml:"group"`
	TokenFile string `yaml:"token_file"`
	Metrics   string `yaml:"metrics"` // host:port of a separate /metrics listener ("" : on the API only)
}

// LoadConfig reads and checks a file.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(b)
}

// ParseConfig decodes YAML strictly, fills defaults and checks.
func ParseConfig(b []byte) (*Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c.defaults()
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return &c, nil
}

func on(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

func (c *Config) defaults() {
	if c.Access.Mode == "" {
		c.Access.Mode = "cpr"
	}
	if c.PFCP.Heartbeat == 0 {
		c.PFCP.Heartbeat = 10 * time.Second
	}
	if c.PFCP.T1 == 0 {
		c.PFCP.T1 = 3 * time.Second
	}
	if c.PFCP.N1 == 0 {
		c.PFCP.N1 = 3
	}
	p := &c.PPPoE
	if p.ACName == "" {
		p.ACName = "edgeplane"
	}
	if p.MRU == 0 {
		p.MRU = 1492
	}
	if len(p.Auth) == 0 {
		p.Auth = []string{"chap", "pap"}
	}
	if p.Keepalive == 0 {
		p.Keepalive = 30 * time.Second
	}
	if p.KeepaliveMax == 0 {
		p.KeepaliveMax = 3
	}
	if p.Restart == 0 {
		p.Restart = 3 * time.Second
	}
	if p.AuthTimeout == 0 {
		p.AuthTimeout = 30 * time.Second
	}
	if p.SetupTimeout == 0 {
		p.SetupTimeout = 60 * time.Second
	}
	if p.MaxPerMAC == 0 {
		p.MaxPerMAC = 1
	}
	i := &c.IPoE
	if i.Lease == 0 {
		i.Lease = time.Hour
	}
	if i.Username == "" {
		i.Username = "mac"
	}
	if i.OfferHold == 0 {
		i.OfferHold = 60 * time.Second
	}
	v := &c.IPv6
	if v.RAInterval == 0 {
		v.RAInterval = 300 * time.Second
	}
	if v.RALifetime == 0 {
		v.RALifetime = 1800 * time.Second
	}
	if v.Valid == 0 {
		v.Valid = 2 * time.Hour
	}
	if v.Preferred == 0 {
		v.Preferred = time.Hour
	}
	if c.AAA.Mode == "" {
		c.AAA.Mode = "local"
	}
	if c.AAA.Interim == 0 {
		c.AAA.Interim = 5 * time.Minute
	}
	l := &c.Limits
	if l.MaxSessions == 0 {
		l.MaxSessions = 65536
	}
	if l.NewPerSecond == 0 {
		l.NewPerSecond = 5000
	}
	if l.NewBurst == 0 {
		l.NewBurst = int(l.NewPerSecond)
	}
	if l.PerMACPerSecond == 0 {
		l.PerMACPerSecond = 5
	}
	if c.API.Listen == "" {
		c.API.Listen = "unix:/run/edgeplane/bng-cp.sock"
	}
}

func (c *Config) check() error {
	switch c.Access.Mode {
	case "cpr":
		if len(c.PFCP.UserPlanes) == 0 {
			return errors.New("access mode cpr needs pfcp.user_planes")
		}
	case "direct":
		if c.Access.Iface == "" {
			return errors.New("access mode direct needs access.iface")
		}
	default:
		return fmt.Errorf("access mode %q: cpr or direct", c.Access.Mode)
	}
	if len(c.Ports) == 0 {
		return errors.New("no ports")
	}
	if c.Access.Mode == "direct" && len(c.Ports) != 1 {
		return errors.New("access mode direct serves one port")
	}
	ups := map[string]bool{}
	for _, u := range c.PFCP.UserPlanes {
		if u.Name == "" || ups[u.Name] {
			return fmt.Errorf("user plane %q: empty or repeated name", u.Name)
		}
		if _, err := netip.ParseAddrPort(u.Address); err != nil {
			return fmt.Errorf("user plane %s: address %q: %w", u.Name, u.Address, err)
		}
		ups[u.Name] = true
	}
	names := map[string]bool{}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Name == "" || names[p.Name] || len(p.Name) > 255 {
			return fmt.Errorf("port %q: empty, repeated or too long", p.Name)
		}
		names[p.Name] = true
		m, err := frame.ParseMAC(p.MAC)
		if err != nil || !m.IsUnicast() {
			return fmt.Errorf("port %s: mac %q: a unicast MAC is needed", p.Name, p.MAC)
		}
		p.mac = m
		if len(ups) > 0 && !ups[p.UserPlane] {
			return fmt.Errorf("port %s: user plane %q is not in pfcp.user_planes", p.Name, p.UserPlane)
		}
	}
	for _, a := range c.PPPoE.Auth {
		if a != "pap" && a != "chap" {
			return fmt.Errorf("pppoe auth %q: pap or chap", a)
		}
	}
	if c.PPPoE.MRU < 576 || c.PPPoE.MRU > 1492 {
		return fmt.Errorf("pppoe mru %d: 576..1492", c.PPPoE.MRU)
	}
	switch c.IPoE.Username {
	case "mac", "circuit-id", "remote-id", "line":
	default:
		return fmt.Errorf("ipoe username %q: mac, circuit-id, remote-id or line", c.IPoE.Username)
	}
	for _, d := range c.IPv6.DNS {
		a, err := netip.ParseAddr(d)
		if err != nil || !a.Is6() {
			return fmt.Errorf("ipv6 dns %q: not an IPv6 address", d)
		}
		c.IPv6.dns = append(c.IPv6.dns, a)
	}
	if c.IPv6.Preferred > c.IPv6.Valid {
		return errors.New("ipv6 preferred_lifetime exceeds valid_lifetime")
	}
	switch c.AAA.Mode {
	case "local":
		if c.AAA.LocalFile == "" && !c.AAA.AcceptUnknown {
			return errors.New("aaa mode local needs local_file (or accept_unknown_ipoe)")
		}
	case "radius":
		if len(c.AAA.Radius.Servers) == 0 {
			return errors.New("aaa mode radius needs radius.servers")
		}
	default:
		return fmt.Errorf("aaa mode %q: local or radius", c.AAA.Mode)
	}
	if c.Limits.NewPerSecond < 0 || c.Limits.PerMACPerSecond < 0 || c.Limits.MaxSessions < 1 {
		return errors.New("limits: negative or zero")
	}
	return nil
}

// PortMAC is the BNG's MAC on a port.
func (p *PortConfig) PortMAC() frame.MAC { return p.mac }

// ParseRate reads a rate in bit/s: 1000, 10k, 20M, 1G (decimal units).
func ParseRate(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	mult := uint64(1)
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult, s = 1000, s[:len(s)-1]
	case "M":
		mult, s = 1000_000, s[:len(s)-1]
	case "G":
		mult, s = 1000_000_000, s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v*float64(mult) > 1e13 {
		return 0, fmt.Errorf("rate %q: a number of bit/s with k, M or G", s)
	}
	return uint64(v * float64(mult)), nil
}
