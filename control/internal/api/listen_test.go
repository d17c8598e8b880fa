package api

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveOn runs the API, as the agent does, on an endpoint Listen opened.
func serveOn(t *testing.T, ep *Endpoint) {
	t.Helper()
	srv := NewServer(Handler(newAgent(t), ep.Options), DefaultReadTimeout)
	srv.ErrorLog = nil
	go srv.Serve(ep.Listener)
	t.Cleanup(func() { srv.Close() })
}

func unixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(_ context.Context, _, _ string) (net.Conn, error) {
		return net.Dial("unix", path)
	}}}
}

func statOf(t *testing.T, p string) (os.FileMode, *syscall.Stat_t) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode(), fi.Sys().(*syscall.Stat_t)
}

// TestUnixSocketMode0660AndGroup: the default listener kind. The old
// agent made its socket with the umask (0755 here), and listened on TCP
// 127.0.0.1:9180 by default, open to every local user.
func TestUnixSocketMode0660AndGroup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "edgeplane")
	sock := filepath.Join(dir, "eth0.sock")
	ep, err := Listen(ListenConfig{Addr: "unix:" + sock, Group: "4242"})
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, ep)
	mode, st := statOf(t, sock)
	if mode.Type() != os.ModeSocket || mode.Perm() != 0o660 || st.Gid != 4242 {
		t.Errorf("socket %v gid %d, want a 0660 socket of group 4242", mode, st.Gid)
	}
	mode, st = statOf(t, dir)
	if !mode.IsDir() || mode.Perm() != 0o750 || st.Gid != 4242 || int(st.Uid) != os.Geteuid() {
		t.Errorf("directory %v uid %d gid %d, want 0750 owned by the agent and group 4242", mode, st.Uid, st.Gid)
	}
	resp, err := unixClient(sock).Get("http://agent/v1/overload")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()
	ep.Listener.Close()
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after close: %v", err)
	}
}

// TestUnixSocketRefusesUnsafePlaces: a directory others can write (they
// could replace the socket), a symbolic link, a directory of another user,
// a group that could not reach the socket; a regular file at the path is
// never deleted (the old agent removed whatever was there).
func TestUnixSocketRefusesUnsafePlaces(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, perm os.FileMode) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, perm); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, perm)
		return d
	}
	open := mk("world", 0o777)
	link := filepath.Join(base, "link")
	os.Symlink(mk("target", 0o755), link)
	other := mk("other", 0o755)
	os.Chown(other, 65534, 65534)
	private := mk("private", 0o700)
	file := filepath.Join(mk("files", 0o755), "api.sock")
	os.WriteFile(file, []byte("keep me"), 0o644)
	cases := []struct{ name, addr, group, want string }{
		{"world-writable-directory", "unix:" + open + "/api.sock", "", "writable by others"},
		{"symlinked-directory", "unix:" + link + "/api.sock", "", "symbolic link"},
		{"other-users-directory", "unix:" + other + "/api.sock", "", "not owned by the agent's user"},
		{"group-cannot-traverse", "unix:" + private + "/api.sock", "4242", "cannot be traversed by group 4242"},
		{"ancestor-writable-by-others", "unix:" + open + "/sub/api.sock", "", "can be changed by another user"},
		{"regular-file", "unix:" + file, "", "exists and is not a socket"},
		{"unknown-group", "unix:" + private + "/api.sock", "no-such-group-here", "--api-group"},
		{"tls-on-unix", "unix:" + private + "/api.sock", "", "apply to a tcp: listener"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := ListenConfig{Addr: c.addr, Group: c.group}
			if c.name == "tls-on-unix" {
				cfg.ClientCAFile = "/nonexistent"
			}
			ep, err := Listen(cfg)
			if err == nil {
				ep.Listener.Close()
				t.Fatal("listening")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want it to say %q", err, c.want)
			}
		})
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "keep me" {
		t.Errorf("the file at the socket path was changed: %q %v", b, err)
	}
}

// TestUnixSocketLiveRefusedStaleReplaced: a socket another agent serves
// on stays (and is an error); one no one answers on is replaced.
func TestUnixSocketLiveRefusedStaleReplaced(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	first, err := Listen(ListenConfig{Addr: "unix:" + sock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(ListenConfig{Addr: "unix:" + sock}); err == nil || !strings.Contains(err.Error(), "another process is serving") {
		t.Fatalf("second listener on a live socket: %v", err)
	}
	// A crashed agent leaves its socket: nothing accepts on it.
	first.Listener.(*net.UnixListener).SetUnlinkOnClose(false)
	first.Listener.Close()
	second, err := Listen(ListenConfig{Addr: "unix:" + sock})
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	second.Listener.Close()
}

func writeToken(t *testing.T, tok string, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(tok+"\n"), perm); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, perm)
	return p
}

const token = "dGVzdC10b2tlbi1vZi1tb3JlLXRoYW4tMTYtYnl0ZXM="

// TestTCPNeedsAuthentication: TCP without a token or mutual TLS is
// refused at start; --api-insecure-loopback allows it on a loopback
// address only.
func TestTCPNeedsAuthentication(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  ListenConfig
		want string // "" when it listens
	}{
		{"bare-host-port", ListenConfig{Addr: "127.0.0.1:0"}, "needs authentication"},
		{"tcp", ListenConfig{Addr: "tcp:127.0.0.1:0"}, "needs authentication"},
		{"insecure-loopback", ListenConfig{Addr: "tcp:127.0.0.1:0", InsecureLoopback: true}, ""},
		{"insecure-loopback-v6", ListenConfig{Addr: "tcp:[::1]:0", InsecureLoopback: true}, ""},
		{"insecure-any-address", ListenConfig{Addr: "tcp::0", InsecureLoopback: true}, "not a loopback address"},
		{"insecure-with-token", ListenConfig{Addr: "tcp:127.0.0.1:0", InsecureLoopback: true, TokenFile: writeToken(t, token, 0o600)}, "drop the flag"},
		{"token", ListenConfig{Addr: "tcp:127.0.0.1:0", TokenFile: writeToken(t, token, 0o600)}, ""},
		{"client-ca-without-cert", ListenConfig{Addr: "tcp:127.0.0.1:0", ClientCAFile: "/nonexistent"}, "needs --api-tls-cert"},
		{"cert-without-key", ListenConfig{Addr: "tcp:127.0.0.1:0", CertFile: "/nonexistent"}, "go together"},
		{"path-without-scheme", ListenConfig{Addr: "/run/x.sock"}, "want unix:/path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ep, err := Listen(c.cfg)
			if err == nil {
				defer ep.Listener.Close()
			}
			switch {
			case c.want == "" && err != nil:
				t.Fatal(err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("%v, want %q", err, c.want)
			case c.want == "" && c.cfg.InsecureLoopback && (!ep.Options.Unauthenticated || !strings.Contains(ep.Desc, "NO AUTHENTICATION")):
				t.Errorf("unauthenticated listener not marked: %+v", ep)
			}
		})
	}
}

// TestTokenFileChecked: a token others can read, a short one, or one that
// cannot be sent in a header is refused at start.
func TestTokenFileChecked(t *testing.T) {
	for _, c := range []struct {
		tok  string
		perm os.FileMode
		want string
	}{
		{token, 0o600, ""},
		{token, 0o640, ""},
		{token, 0o644, "readable by others"},
		{token, 0o660, "writable by anyone but its owner"},
		{"short", 0o600, "at least 16"},
		{"has spaces in it, long enough", 0o600, "b64token"},
	} {
		_, err := ReadToken(writeToken(t, c.tok, c.perm))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("token %q mode %04o: %v, want %q", c.tok, c.perm, err, c.want)
		}
	}
}

// TestBearerToken: on TCP the old agent served anyone; now a request
// without the token, with a wrong one or another scheme gets 401 with
// WWW-Authenticate (RFC 6750), and changes nothing.
func TestBearerToken(t *testing.T) {
	ep, err := Listen(ListenConfig{Addr: "tcp:127.0.0.1:0", TokenFile: writeToken(t, token, 0o600)})
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, ep)
	url := "http://" + ep.Listener.Addr().String()
	for _, c := range []struct {
		name, auth string
		code       int
	}{
		{"none", "", 401},
		{"wrong", "Bearer " + strings.Repeat("A", len(token)), 401},
		{"prefix", "Bearer " + token[:len(token)-1], 401},
		{"basic", "Basic " + token, 401},
		{"right", "Bearer " + token, 200},
		{"scheme-case", "bearer " + token, 200},
	} {
		req, _ := http.NewRequest("PUT", url+"/v1/overload", strings.NewReader(`{"mode": "all"}`))
		req.Header.Set("Content-Type", "application/json")
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.code)
		}
		if c.code == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
			t.Errorf("%s: WWW-Authenticate %q", c.name, resp.Header.Get("WWW-Authenticate"))
		}
		if c.code == 401 {
			req, _ := http.NewRequest("GET", url+"/v1/overload", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, _ := http.DefaultClient.Do(req)
			var b [512]byte
			n, _ := resp.Body.Read(b[:])
			resp.Body.Close()
			if strings.Contains(string(b[:n]), `"all"`) {
				t.Errorf("%s: a refused request changed the mode", c.name)
			}
		}
	}
	resp, err := http.Get(url + "/no/such/path")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("unknown path without a token: %d, want 401 (no map of the API for strangers)", resp.StatusCode)
		}
	}
}

type pki struct {
	dir                    string
	caPEM, srvCert, srvKey string
	client                 tls.Certificate
	pool                   *x509.CertPool
	strangerCert           tls.Certificate
}

func newPKI(t *testing.T) pki {
	t.Helper()
	p := pki{dir: t.TempDir(), pool: x509.NewCertPool()}
	issue := func(tmpl, parent *x509.Certificate, signer *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, []byte, []byte) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if signer == nil {
			signer = key
		}
		if parent == nil {
			parent = tmpl
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := x509.ParseCertificate(der)
		kder, _ := x509.MarshalECPrivateKey(key)
		return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	}
	now := time.Now()
	ca := func(name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
		c, k, cp, _ := issue(&x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign}, nil, nil)
		return c, k, cp
	}
	caCert, caKey, caPEM := ca("edgeplane test CA")
	p.pool.AddCert(caCert)
	_, _, srvPEM, srvKey := issue(&x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "agent"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, caCert, caKey)
	leaf := func(parent *x509.Certificate, key *ecdsa.PrivateKey) tls.Certificate {
		_, _, cp, kp := issue(&x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "controller"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, parent, key)
		c, err := tls.X509KeyPair(cp, kp)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	p.client = leaf(caCert, caKey)
	otherCA, otherKey, _ := ca("some other CA")
	p.strangerCert = leaf(otherCA, otherKey)
	write := func(name string, b []byte) string {
		f := filepath.Join(p.dir, name)
		os.WriteFile(f, b, 0o600)
		return f
	}
	p.caPEM, p.srvCert, p.srvKey = write("ca.pem", caPEM), write("agent.pem", srvPEM), write("agent.key", srvKey)
	return p
}

// TestMutualTLS: with a client CA, a client without a certificate of that
// CA does not get past the handshake; one with it is served.
func TestMutualTLS(t *testing.T) {
	p := newPKI(t)
	ep, err := Listen(ListenConfig{Addr: "tcp:127.0.0.1:0", CertFile: p.srvCert, KeyFile: p.srvKey, ClientCAFile: p.caPEM})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ep.Desc, "mutual TLS") {
		t.Errorf("desc %q", ep.Desc)
	}
	serveOn(t, ep)
	url := "https://" + ep.Listener.Addr().String() + "/v1/overload"
	client := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.pool, Certificates: certs}}}
	}
	for _, c := range []struct {
		name  string
		certs []tls.Certificate
		ok    bool
	}{
		{"no-certificate", nil, false},
		{"other-ca", []tls.Certificate{p.strangerCert}, false},
		{"our-ca", []tls.Certificate{p.client}, true},
	} {
		resp, err := client(c.certs...).Get(url)
		if err == nil {
			resp.Body.Close()
		}
		if got := err == nil && resp.StatusCode == 200; got != c.ok {
			t.Errorf("%s: %v %v, want served=%v", c.name, resp, err, c.ok)
		}
	}
}
