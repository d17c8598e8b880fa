package api

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Listener configuration (the agent's --listen and --api-* flags).
//
// The API changes where this host sends traffic, so it is never open to
// every local user. By default it is a Unix socket, mode 0660, owned by the
// agent and a group the operator names: membership of that group is the
// permission to steer. TCP is for remote controllers and needs a bearer
// token (TokenFile), mutual TLS (CertFile, KeyFile, ClientCAFile), or both.
// Unauthenticated TCP exists for tests only, on a loopback address, and
// says so in the log at start and with every change it serves.
type ListenConfig struct {
	Addr             string // unix:/path or tcp:host:port (a bare host:port is tcp)
	Group            string // the Unix socket's group, a name or a gid; "": the agent's
	TokenFile        string // bearer token, required on every request when set
	CertFile         string // TLS server certificate (TCP)
	KeyFile          string
	ClientCAFile     string // CA of the client certificates (mutual TLS)
	InsecureLoopback bool   // allow TCP without authentication on a loopback address
}

// Endpoint is an open listener and the handler options it needs.
type Endpoint struct {
	Listener net.Listener
	Options  Options
	Desc     string // what the log says it is
}

// Server limits and timeouts. ReadHeaderTimeout also bounds a TLS
// handshake; ReadTimeout bounds the whole request, body included, so a
// client sending a body a byte at a time is answered 408 and dropped;
// WriteTimeout (counted from the end of the headers) outlasts it so that
// answer can be written.
const (
	MaxHeaderBytes     = 64 << 10
	DefaultReadTimeout = 10 * time.Second
	headerTimeout      = 5 * time.Second
	idleTimeout        = 60 * time.Second
	writeSlack         = 30 * time.Second
)

// NewServer is the API's HTTP server with the limits above.
func NewServer(h http.Handler, readTimeout time.Duration) *http.Server {
	if readTimeout <= 0 {
		readTimeout = DefaultReadTimeout
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(readTimeout, headerTimeout),
		ReadTimeout:       readTimeout,
		WriteTimeout:      readTimeout + writeSlack,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ConnContext:       connPeer,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
	}
}

// Listen opens the listener c describes, or says which flag is missing
// or wrong; it never opens an unauthenticated TCP listener the config did
// not ask for by name.
func Listen(c ListenConfig) (*Endpoint, error) {
	network, addr, err := splitAddr(c.Addr)
	if err != nil {
		return nil, err
	}
	var ep Endpoint
	if c.TokenFile != "" {
		if ep.Options.Token, err = ReadToken(c.TokenFile); err != nil {
			return nil, err
		}
	}
	if network == "unix" {
		if c.CertFile != "" || c.KeyFile != "" || c.ClientCAFile != "" || c.InsecureLoopback {
			return nil, errors.New("--api-tls-* and --api-insecure-loopback apply to a tcp: listener, not a Unix socket")
		}
		gid := -1
		if c.Group != "" {
			if gid, err = lookupGroup(c.Group); err != nil {
				return nil, err
			}
		}
		if ep.Listener, err = listenUnix(addr, gid); err != nil {
			return nil, err
		}
		ep.Desc = fmt.Sprintf("unix:%s (mode 0660, group %s)", addr, groupName(c.Group))
		if ep.Options.Token != nil {
			ep.Desc += ", bearer token"
		}
		return &ep, nil
	}
	return listenTCP(c, addr, ep)
}

func splitAddr(a string) (network, addr string, err error) {
	switch {
	case strings.HasPrefix(a, "unix:"):
		p := strings.TrimPrefix(a, "unix:")
		if p == "" {
			return "", "", errors.New("--listen unix: needs a path")
		}
		p, err = filepath.Abs(p)
		return "unix", p, err
	case strings.HasPrefix(a, "tcp:"):
		return "tcp", strings.TrimPrefix(a, "tcp:"), nil
	case strings.Contains(a, "/"):
		return "", "", fmt.Errorf("--listen %q: want unix:/path or tcp:host:port", a)
	}
	return "tcp", a, nil
}

func listenTCP(c ListenConfig, addr string, ep Endpoint) (*Endpoint, error) {
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("--api-tls-cert and --api-tls-key go together")
	}
	if c.ClientCAFile != "" && c.CertFile == "" {
		return nil, errors.New("--api-client-ca (mutual TLS) needs --api-tls-cert and --api-tls-key")
	}
	authenticated := ep.Options.Token != nil || c.ClientCAFile != ""
	if c.InsecureLoopback && authenticated {
		return nil, errors.New("--api-insecure-loopback with a token or a client CA: the listener is authenticated, drop the flag")
	}
	if !authenticated && !c.InsecureLoopback {
		return nil, fmt.Errorf("--listen tcp:%s needs authentication: --api-token-file, or mutual TLS (--api-tls-cert, --api-tls-key, --api-client-ca); "+
			"for a test on a loopback address only, --api-insecure-loopback", addr)
	}
	var tlsConf *tls.Config
	if c.CertFile != "" {
		var err error
		if tlsConf, err = serverTLS(c.CertFile, c.KeyFile, c.ClientCAFile); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	loopback := ln.Addr().(*net.TCPAddr).IP.IsLoopback()
	var auth []string
	if ep.Options.Token != nil {
		auth = append(auth, "bearer token")
	}
	if c.ClientCAFile != "" {
		auth = append(auth, "mutual TLS")
	} else if tlsConf != nil {
		auth = append(auth, "TLS")
	}
	switch {
	case c.InsecureLoopback && !loopback:
		ln.Close()
		return nil, fmt.Errorf("--api-insecure-loopback: %s is not a loopback address", ln.Addr())
	case c.InsecureLoopback:
		ep.Options.Unauthenticated = true
		auth = append(auth, "NO AUTHENTICATION")
		slog.Warn("API ON TCP WITHOUT AUTHENTICATION (--api-insecure-loopback): every local user can change steering; for tests only",
			"addr", ln.Addr().String())
	case tlsConf == nil && !loopback:
		slog.Warn("bearer token over plain TCP: anyone on the path can read it; add --api-tls-cert and --api-tls-key",
			"addr", ln.Addr().String())
	}
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
	}
	ep.Listener = ln
	ep.Desc = fmt.Sprintf("tcp:%s (%s)", ln.Addr(), strings.Join(auth, ", "))
	return &ep, nil
}

func lookupGroup(g string) (int, error) {
	if n, err := strconv.Atoi(g); err == nil && n >= 0 {
		return n, nil
	}
	grp, err := user.LookupGroup(g)
	if err != nil {
		return 0, fmt.Errorf("--api-group: %w", err)
	}
	return strconv.Atoi(grp.Gid)
}

func groupName(g string) string {
	if g == "" {
		return strconv.Itoa(os.Getegid()) + " (the agent's)"
	}
	return g
}

// listenUnix binds the socket at path, mode 0660 and group gid (-1: the
// agent's), in a directory no one else can write: another user who could
// write there could replace the socket with their own and read every
// request. A socket left by an agent that died is replaced; anything else
// at path (a file, a live socket) is an error, never deleted.
func listenUnix(path string, gid int) (net.Listener, error) {
	if err := socketDir(filepath.Dir(path), gid); err != nil {
		return nil, err
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	// The socket is created with the process umask: 0177 leaves 0600,
	// never more, until the chmod below. Nothing else runs yet that
	// creates files (the agent starts after its listener).
	old := unix.Umask(0o177)
	ln, err := net.Listen("unix", path)
	unix.Umask(old)
	if err != nil {
		return nil, err
	}
	if gid >= 0 {
		err = os.Lchown(path, -1, gid)
	}
	if err == nil {
		err = os.Chmod(path, 0o660)
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return ln, nil
}

// socketDir makes sure dir exists, is a directory the agent's user owns
// and only it can write, reachable through ancestors only root or that
// user can change (sticky directories such as /tmp are fine), and that the
// socket's group can traverse it. A directory it creates is 0750, owned
// by that group.
func socketDir(dir string, gid int) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		if st == nil || (st.Uid != 0 && int(st.Uid) != os.Geteuid()) ||
			fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0 {
			return fmt.Errorf("socket directory %s: its ancestor %s can be changed by another user, who could replace the socket", dir, p)
		}
		if p == "/" {
			break
		}
	}
	if err := os.Mkdir(dir, 0o750); err == nil {
		if err := os.Chmod(dir, 0o750); err != nil { // whatever the umask
			return err
		}
		if gid >= 0 {
			if err := os.Lchown(dir, -1, gid); err != nil {
				return err
			}
		}
	} else if !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	perm := fi.Mode().Perm()
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("socket directory %s is a symbolic link: give the directory it points to", dir)
	case !fi.IsDir():
		return fmt.Errorf("socket directory %s is not a directory", dir)
	case st == nil || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("socket directory %s is not owned by the agent's user (uid %d): its owner could replace the socket", dir, os.Geteuid())
	case perm&0o022 != 0:
		return fmt.Errorf("socket directory %s is mode %04o, writable by others, who could replace the socket: use a directory only the agent can write (such as /run/edgeplane)", dir, perm)
	case gid >= 0 && !(int(st.Gid) == gid && perm&0o010 != 0) && perm&0o001 == 0:
		return fmt.Errorf("socket directory %s (mode %04o, gid %d) cannot be traversed by group %d: chgrp %d %s and chmod g+x it, or use another directory", dir, perm, st.Gid, gid, gid, dir)
	}
	return nil
}

// removeStale removes a socket nothing answers on (its agent died);
// a live socket or anything that is not a socket stays, and is an error.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket: not removing it (give another --listen path, or remove it yourself)", path)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("%s: another process is serving on this socket (another agent for the interface?)", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	slog.Info("removed a stale API socket (no one was listening)", "path", path)
	return nil
}
