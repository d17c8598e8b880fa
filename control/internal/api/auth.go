package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"
)

// MinTokenLen is the shortest bearer token accepted: 16 bytes of an
// RFC 6750 b64token, 96 bits at the least (`head -c 32 /dev/urandom |
// base64` gives 44).
const MinTokenLen = 16

// RFC 6750 section 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" /
// "~" / "+" / "/" ) *"="
var b64token = regexp.MustCompile(`^[A-Za-z0-9._~+/-]+=*$`)

// ReadToken reads a bearer token file: one token, surrounding white space
// ignored. The file must not be readable or writable by others (group
// read is allowed: a group of clients may share it).
func ReadToken(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("token file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o027 != 0 {
		return nil, fmt.Errorf("token file %s is mode %04o: it must not be readable by others or writable by anyone but its owner (chmod 600 or 640)", path, perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case len(tok) < MinTokenLen:
		return nil, fmt.Errorf("token file %s: the token has %d bytes, at least %d are needed", path, len(tok), MinTokenLen)
	case !b64token.MatchString(tok):
		return nil, fmt.Errorf("token file %s: the token must be one RFC 6750 b64token (A-Z a-z 0-9 - . _ ~ + / then =)", path)
	}
	return []byte(tok), nil
}

// requireToken answers 401 unless the request carries the token. The
// comparison is of SHA-256 digests in constant time, so neither the
// token's bytes nor its length show in the answer time.
func requireToken(token []byte, next http.Handler) http.Handler {
	want := sha256.Sum256(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, found := strings.Cut(r.Header.Get("Authorization"), " ")
		if !found || !strings.EqualFold(scheme, "Bearer") {
			w.Header().Set("WWW-Authenticate", `Bearer realm="edgeplane-agent"`)
			writeProblem(w, http.StatusUnauthorized, "this listener needs Authorization: Bearer <token>")
			return
		}
		h := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if subtle.ConstantTimeCompare(h[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="edgeplane-agent", error="invalid_token"`)
			writeProblem(w, http.StatusUnauthorized, "wrong bearer token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serverTLS is the TLS configuration of a TCP listener: the server's
// certificate and, with a client CA, mutual TLS (a client without a
// certificate signed by that CA fails the handshake).
func serverTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAFile != "" {
		pem, err := os.ReadFile(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client CA %s: no PEM certificate in it", clientCAFile)
		}
		c.ClientCAs = pool
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c, nil
}

type peerKey struct{}

// connPeer records who is at the other end of a connection: the uid and
// pid of a Unix socket peer (SO_PEERCRED), else the address.
func connPeer(ctx context.Context, c net.Conn) context.Context {
	p := c.RemoteAddr().String()
	if uc, ok := c.(*net.UnixConn); ok {
		if raw, err := uc.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) {
				if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
					p = fmt.Sprintf("uid=%d pid=%d", cred.Uid, cred.Pid)
				}
			})
		}
	}
	return context.WithValue(ctx, peerKey{}, p)
}

// peer names a request's sender for the log: the Unix peer's uid, or the
// address and the client certificate's subject.
func peer(r *http.Request) string {
	p, _ := r.Context().Value(peerKey{}).(string)
	if p == "" {
		p = r.RemoteAddr
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		p += " cert=" + r.TLS.PeerCertificates[0].Subject.String()
	}
	return p
}

// RequireToken wraps a handler of another API served with this package's
// listeners (the BNG control plane's) in the same bearer-token check.
func RequireToken(token []byte, next http.Handler) http.Handler { return requireToken(token, next) }
