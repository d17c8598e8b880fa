package aaa

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"edgeplane/control/internal/bngcp/ppp"
)

// LocalUser is one line of the subscriber file.
type LocalUser struct {
	Name     string
	Password string // "-": none (IPoE subscribers named by MAC or line)
	Result          // what the subscriber gets (Accept set)
}

// Local authenticates from a subscriber file, one subscriber a line:
//
//	# name          password  attributes
//	alice           s3cret    profile=gold ipv4=198.18.100.50
//	bob             hunter2   pool=residential pool6=residential6
//	02:00:00:10:00:01  -      profile=silver
//
// Attributes: profile=, ipv4=, pool=, ipv6-block=, pool6=,
// session-timeout=, interim=.  A name not in the file is rejected, or
// accepted with DefaultProfile when AcceptUnknown is set (IPoE lines an
// operator does not list one by one).
type Local struct {
	mu             sync.RWMutex
	users          map[string]*LocalUser
	AcceptUnknown  bool
	DefaultProfile string
}

// LoadLocal reads a subscriber file.
func LoadLocal(path string) (*Local, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l := &Local{}
	if err := l.Read(f, path); err != nil {
		return nil, err
	}
	return l, nil
}

// Read replaces the users with those of r (name is for errors).
func (l *Local) Read(r io.Reader, name string) error {
	users := map[string]*LocalUser{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 4096)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 {
			return fmt.Errorf("%s:%d: want <name> <password|-> [attributes]", name, line)
		}
		u := &LocalUser{Name: f[0], Password: f[1]}
		u.Accept = true
		for _, kv := range f[2:] {
			if err := setAttr(&u.Result, kv); err != nil {
				return fmt.Errorf("%s:%d: %w", name, line, err)
			}
		}
		if _, dup := users[u.Name]; dup {
			return fmt.Errorf("%s:%d: %s is listed twice", name, line, u.Name)
		}
		users[u.Name] = u
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	l.mu.Lock()
	l.users = users
	l.mu.Unlock()
	return nil
}

func setAttr(r *Result, kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || v == "" {
		return fmt.Errorf("attribute %q: want key=value", kv)
	}
	var err error
	switch k {
	case "profile":
		r.Profile = v
	case "pool":
		r.Pool4 = v
	case "pool6":
		r.Pool6 = v
	case "ipv4":
		r.IPv4, err = netip.ParseAddr(v)
		if err == nil && !r.IPv4.Is4() {
			err = fmt.Errorf("%s is not IPv4", v)
		}
	case "ipv6-block":
		r.IPv6Block, err = netip.ParsePrefix(v)
		if err == nil && !r.IPv6Block.Addr().Is6() {
			err = fmt.Errorf("%s is not IPv6", v)
		}
	case "session-timeout":
		r.SessionTimeout, err = time.ParseDuration(v)
	case "interim":
		r.Interim, err = time.ParseDuration(v)
	default:
		return fmt.Errorf("unknown attribute %q", k)
	}
	if err != nil {
		return fmt.Errorf("attribute %s: %w", k, err)
	}
	return nil
}

// Len is the number of subscribers in the file.
func (l *Local) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.users)
}

// Slow implements Authenticator.
func (l *Local) Slow() bool { return false }

// Authenticate implements Authenticator.
func (l *Local) Authenticate(_ context.Context, r *Request) Result {
	l.mu.RLock()
	u := l.users[r.User]
	l.mu.RUnlock()
	if u == nil {
		if l.AcceptUnknown && r.Method == MethodNone {
			return Result{Accept: true, Profile: l.DefaultProfile}
		}
		return Result{Reason: "unknown subscriber"}
	}
	switch r.Method {
	case MethodPAP:
		if u.Password == "-" || subtle.ConstantTimeCompare([]byte(u.Password), r.Password) != 1 {
			return Result{Reason: "wrong password"}
		}
	case MethodCHAP:
		if u.Password == "-" || !ppp.CHAPMD5Check(r.CHAPID, []byte(u.Password), r.CHAPChallenge, r.CHAPResponse) {
			return Result{Reason: "wrong password"}
		}
	case MethodNone:
		if u.Password != "-" && subtle.ConstantTimeCompare([]byte(u.Password), r.Password) != 1 {
			return Result{Reason: "wrong password"}
		}
	}
	res := u.Result
	if res.Profile == "" {
		res.Profile = l.DefaultProfile
	}
	return res
}

// FileAccounter writes accounting records as JSON lines (local mode:
// what a RADIUS accounting server would have received).
type FileAccounter struct {
	mu sync.Mutex
	w  io.Writer
	c  io.Closer
}

// NewFileAccounter appends records to path.
func NewFileAccounter(path string) (*FileAccounter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, err
	}
	return &FileAccounter{w: f, c: f}, nil
}

type acctJSON struct {
	Type        string    `json:"type"`
	Service     string    `json:"service"`
	Session     string    `json:"acct_session_id"`
	User        string    `json:"user,omitempty"`
	NASPortID   string    `json:"nas_port_id,omitempty"`
	MAC         string    `json:"mac"`
	IPv4        string    `json:"ipv4,omitempty"`
	IPv6        string    `json:"ipv6,omitempty"`
	Delegated   string    `json:"delegated,omitempty"`
	Usage       Usage     `json:"usage"`
	SessionTime float64   `json:"session_time_s"`
	Cause       int       `json:"terminate_cause,omitempty"`
	Time        time.Time `json:"time"`
	CircuitID   string    `json:"agent_circuit_id,omitempty"`
	RemoteID    string    `json:"agent_remote_id,omitempty"`
	Class       []string  `json:"class,omitempty"`
}

// Account implements Accounter.
func (f *FileAccounter) Account(r *AcctRecord) {
	j := acctJSON{Type: r.Type.String(), Service: r.Service.String(), Session: r.SessionID, User: r.User,
		NASPortID: r.NASPortID, MAC: r.Circuit.MAC.String(), Usage: r.Usage,
		SessionTime: r.SessionTime.Seconds(), Cause: r.TerminateCause, Time: r.Time,
		CircuitID: r.LineID.CircuitID, RemoteID: r.LineID.RemoteID}
	if r.IPv4.IsValid() {
		j.IPv4 = r.IPv4.String()
	}
	if r.IPv6.IsValid() {
		j.IPv6 = r.IPv6.String()
	}
	if r.Delegated.IsValid() {
		j.Delegated = r.Delegated.String()
	}
	for _, c := range r.Class {
		j.Class = append(j.Class, string(c))
	}
	b, err := json.Marshal(j)
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.w.Write(append(b, '\n'))
}

// Close closes the file.
func (f *FileAccounter) Close() error { return f.c.Close() }

// Discard drops accounting records (no accounting configured).
type Discard struct{}

// Account implements Accounter.
func (Discard) Account(*AcctRecord) {}
