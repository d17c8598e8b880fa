// Package dpctl is a client of edgeplane-dp's control socket: one JSON
// object per line each way, answered in order (docs/architecture.md,
// "Control socket protocol" and "Control socket guarantees").
//
// A Client keeps one connection and pipelines on it: Go writes a request
// line and returns at once, a reader goroutine matches answer lines to the
// requests in the order they were written.  Up to MaxInFlight requests are
// outstanding; a caller past that waits for a slot (so a fast producer
// cannot queue more answers than the server lets a client hold, 256 KiB,
// without reading them: the reader always reads).
//
// What the server does to a client, and what the Client does about it:
//
//	server                                        Client
//	closes an idle connection when its 64 slots   the notice arrives with no
//	are full ("connection closed: ...")           request pending: the
//	                                              connection is dropped and the
//	                                              next request dials again
//	closes a connection whose line took > 5 s     every line is written with one
//	                                              Write of the whole line
//	refuses a connection, every slot busy         Dial error; the next request
//	                                              dials again
//	goes away (restart, crash)                    requests in flight fail with
//	                                              ErrConnLost (applied or not:
//	                                              unknown); the next request
//	                                              dials again and Generation()
//	                                              moves on
//
// Requests that failed with ErrConnLost may or may not have been applied;
// callers whose operations are not idempotent reconcile (read back) before
// retrying.
package dpctl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrConnLost: the connection broke with the request written or queued;
// whether the data plane applied it is unknown.
var ErrConnLost = errors.New("control socket connection lost")

// ErrClosed: Close was called.
var ErrClosed = errors.New("control socket client closed")

// Error is the data plane's {"ok": false, "error": msg} for a request.
type Error struct {
	Cmd string
	Msg string
	// Index is the entry a bulk command names ("subscribers[3]: ..."), or -1.
	Index int
}

func (e *Error) Error() string { return e.Cmd + ": " + e.Msg }

// Options tune a Client; the zero value is usable.
type Options struct {
	DialTimeout time.Duration // one connection attempt (default 2 s)
	MaxInFlight int           // requests outstanding on the connection (default 64)
	// MaxLine refuses to send a request line longer than this (default
	// 8 MiB, the server's limit: it would answer with an error and close).
	MaxLine int
}

// Client is safe for concurrent use.
type Client struct {
	path string
	opt  Options

	mu     sync.Mutex
	cur    *conn
	closed bool
	gen    atomic.Uint64 // successful dials so far
}

// New returns a client of the socket at path; nothing is dialled until the
// first request.
func New(path string, opt Options) *Client {
	if opt.DialTimeout <= 0 {
		opt.DialTimeout = 2 * time.Second
	}
	if opt.MaxInFlight <= 0 {
		opt.MaxInFlight = 64
	}
	if opt.MaxLine <= 0 {
		opt.MaxLine = 8 << 20
	}
	return &Client{path: path, opt: opt}
}

// Path is the socket's path.
func (c *Client) Path() string { return c.path }

// Generation counts the connections made so far: a caller that sees it
// change knows the data plane may have restarted in between.
func (c *Client) Generation() uint64 { return c.gen.Load() }

// Close fails every request in flight with ErrClosed and closes the
// connection.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	cur := c.cur
	c.cur = nil
	c.mu.Unlock()
	if cur != nil {
		cur.kill(ErrClosed)
	}
	return nil
}

// Call is one request in flight.
type Call struct {
	Cmd    string
	Result json.RawMessage // the "result" object of an ok answer
	Err    error           // *Error, ErrConnLost, ErrClosed, or a dial error
	done   chan struct{}
	conn   *conn
}

// Done is closed when the answer (or the failure) is in.
func (k *Call) Done() <-chan struct{} { return k.done }

// Wait waits for the answer or ctx; on ctx's end the answer is discarded
// when it comes (the connection stays usable).
func (k *Call) Wait(ctx context.Context) (json.RawMessage, error) {
	select {
	case <-k.done:
		return k.Result, k.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (k *Call) finish(res json.RawMessage, err error) {
	k.Result, k.Err = res, err
	if k.conn != nil {
		<-k.conn.slots
	}
	close(k.done)
}

func failed(cmd string, err error) *Call {
	k := &Call{Cmd: cmd, Err: err, done: make(chan struct{})}
	close(k.done)
	return k
}

// Go sends req (any value encoding/json turns into an object with a "cmd"
// member) without waiting for the answer.
func (c *Client) Go(ctx context.Context, cmd string, req any) *Call {
	line, err := json.Marshal(req)
	if err != nil {
		return failed(cmd, fmt.Errorf("%s: encode: %w", cmd, err))
	}
	return c.GoRaw(ctx, cmd, line)
}

// GoRaw sends one pre-encoded JSON object (no newline).  A line containing
// a newline would be two requests: it is refused.
func (c *Client) GoRaw(ctx context.Context, cmd string, line []byte) *Call {
	if len(line)+1 > c.opt.MaxLine {
		return failed(cmd, fmt.Errorf("%s: request of %d bytes exceeds the control socket's line limit", cmd, len(line)))
	}
	if bytes.IndexByte(line, '\n') >= 0 {
		return failed(cmd, fmt.Errorf("%s: request contains a newline", cmd))
	}
	cn, err := c.conn()
	if err != nil {
		return failed(cmd, err)
	}
	return cn.send(ctx, cmd, line)
}

// Do sends req and decodes the answer's result into res (if not nil).
func (c *Client) Do(ctx context.Context, cmd string, req, res any) error {
	raw, err := c.Go(ctx, cmd, req).Wait(ctx)
	if err != nil {
		return err
	}
	if res == nil {
		return nil
	}
	if err := json.Unmarshal(raw, res); err != nil {
		return fmt.Errorf("%s: decode answer: %w", cmd, err)
	}
	return nil
}

// Cmd sends {"cmd": cmd, fields...} and decodes the result into res.
func (c *Client) Cmd(ctx context.Context, cmd string, fields map[string]any, res any) error {
	req := make(map[string]any, len(fields)+1)
	for k, v := range fields {
		req[k] = v
	}
	req["cmd"] = cmd
	return c.Do(ctx, cmd, req, res)
}

// conn returns the live connection, dialling one if there is none.
func (c *Client) conn() (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.cur != nil && !c.cur.isDead() {
		return c.cur, nil
	}
	nc, err := net.DialTimeout("unix", c.path, c.opt.DialTimeout)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", c.path, err)
	}
	cn := &conn{c: nc, w: bufio.NewWriterSize(nc, 64<<10), slots: make(chan struct{}, c.opt.MaxInFlight),
		dead: make(chan struct{})}
	c.cur = cn
	c.gen.Add(1)
	go cn.read()
	return cn, nil
}

// conn is one connection: requests written in order, answers read in order.
type conn struct {
	c     net.Conn
	wmu   sync.Mutex // one writer at a time: enqueue + write are one step
	w     *bufio.Writer
	slots chan struct{} // a token per request in flight

	qmu     sync.Mutex
	pending []*Call // written, answer not read yet; front = oldest
	head    int
	err     error // set once the connection is dead
	dead    chan struct{}
}

func (cn *conn) isDead() bool {
	select {
	case <-cn.dead:
		return true
	default:
		return false
	}
}

func (cn *conn) send(ctx context.Context, cmd string, line []byte) *Call {
	k := &Call{Cmd: cmd, done: make(chan struct{})}
	select {
	case cn.slots <- struct{}{}:
	case <-cn.dead:
		return failed(cmd, ErrConnLost)
	case <-ctx.Done():
		return failed(cmd, ctx.Err())
	}
	k.conn = cn
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	cn.qmu.Lock()
	if cn.err != nil {
		cn.qmu.Unlock()
		<-cn.slots
		k.conn = nil
		return failed(cmd, ErrConnLost)
	}
	cn.pending = append(cn.pending, k)
	cn.qmu.Unlock()
	// One line, one flush: the server closes a connection that leaves a
	// line unfinished for 5 s, so a line is never left half in our buffer.
	_, err := cn.w.Write(line)
	if err == nil {
		err = cn.w.WriteByte('\n')
	}
	if err == nil {
		err = cn.w.Flush()
	}
	if err != nil {
		cn.kill(ErrConnLost)
	}
	return k
}

// pop takes the oldest pending call; nil when none is pending.
func (cn *conn) pop() *Call {
	cn.qmu.Lock()
	defer cn.qmu.Unlock()
	if cn.head == len(cn.pending) {
		return nil
	}
	k := cn.pending[cn.head]
	cn.pending[cn.head] = nil
	cn.head++
	if cn.head == len(cn.pending) {
		cn.pending, cn.head = cn.pending[:0], 0
	}
	return k
}

// kill marks the connection dead and fails everything pending with err.
func (cn *conn) kill(err error) {
	cn.qmu.Lock()
	if cn.err != nil {
		cn.qmu.Unlock()
		return
	}
	cn.err = err
	left := append([]*Call(nil), cn.pending[cn.head:]...)
	cn.pending, cn.head = nil, 0
	close(cn.dead)
	cn.qmu.Unlock()
	cn.c.Close()
	for _, k := range left {
		k.finish(nil, err)
	}
}

// answer is one line from the server.
type answer struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

// closeNotice: the server's words when it drops a connection it did not
// read a request from (eviction) -- not an answer to any request.
const closeNotice = "connection closed:"

func (cn *conn) read() {
	r := bufio.NewReaderSize(cn.c, 256<<10)
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// An answer longer than the buffer: gather it whole.
			full := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = r.ReadSlice('\n')
				full = append(full, line...)
			}
			line = full
		}
		if err != nil {
			cn.kill(ErrConnLost)
			return
		}
		var a answer
		if jerr := json.Unmarshal(line, &a); jerr != nil {
			cn.kill(fmt.Errorf("%w: undecodable answer: %v", ErrConnLost, jerr))
			return
		}
		if !a.OK && strings.HasPrefix(a.Error, closeNotice) {
			cn.kill(ErrConnLost)
			return
		}
		k := cn.pop()
		if k == nil {
			// An answer nobody asked for: the stream is out of step.
			cn.kill(fmt.Errorf("%w: unsolicited answer %q", ErrConnLost, truncate(line)))
			return
		}
		if a.OK {
			res := a.Result
			if len(res) == 0 {
				res = json.RawMessage("{}")
			} else {
				res = append(json.RawMessage(nil), res...)
			}
			k.finish(res, nil)
		} else {
			k.finish(nil, newError(k.Cmd, a.Error))
		}
	}
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return strings.TrimSpace(string(b))
}

// newError parses the entry index out of a bulk command's error
// ("subscribers[12] (id 13): ..."), so a caller can tell which entry failed.
func newError(cmd, msg string) *Error {
	e := &Error{Cmd: cmd, Msg: msg, Index: -1}
	i := strings.Index(msg, "s[")
	if i < 0 {
		return e
	}
	n, digits := 0, 0
	for _, ch := range msg[i+2:] {
		if ch == ']' {
			break
		}
		if ch < '0' || ch > '9' || digits > 8 {
			return e
		}
		n = n*10 + int(ch-'0')
		digits++
	}
	if digits > 0 {
		e.Index = n
	}
	return e
}
