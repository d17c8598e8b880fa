// Package api is the northbound REST interface (the DPPnApp NBI of the XDP
// steering paper, docs/xdp-steering.md): intents in,
// statistics out. Handlers decode, call one agent function, encode; they
// never touch the maps. The OpenAPI document (internal/apispec) lists every
// route and is the validator of every request body and path parameter;
// listen.go and auth.go decide who may reach the handlers at all.
package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"edgeplane/control/internal/agent"
	"edgeplane/control/internal/apispec"
	"edgeplane/control/internal/intent"
)

// MaxBody bounds a request body: an intent is a few hundred bytes, a batch
// of a thousand fits.
const MaxBody = 1 << 20

// Options are how the handler authenticates and what it logs.
type Options struct {
	Token []byte // bearer token every request must carry; nil: none (the Unix socket's mode decides)
	// Unauthenticated marks an unauthenticated TCP listener: every change
	// it serves is logged as such.
	Unauthenticated bool
}

type server struct {
	*Router
	a    *agent.Agent
	opts Options
}

// Handler serves the API for an agent.
func Handler(a *agent.Agent, o Options) http.Handler {
	s := &server{Router: NewRouter(apispec.Spec(), MaxBody), a: a, opts: o}
	metrics := promhttp.HandlerFor(a.Metrics.Registry, promhttp.HandlerOpts{})
	for _, rt := range []Route{
		{"GET", "/v1/intents", s.list},
		{"POST", "/v1/intents", s.apply},
		{"GET", "/v1/intents/{id}", s.get},
		{"DELETE", "/v1/intents/{id}", s.delete},
		{"GET", "/v1/stats", s.stats},
		{"GET", "/v1/overload", s.getOverload},
		{"PUT", "/v1/overload", s.putOverload},
		{"GET", "/v1/alt-nodes", s.getAlt},
		{"PUT", "/v1/alt-nodes", s.putAlt},
		{"GET", "/metrics", func(w http.ResponseWriter, r *http.Request, _ []byte) { metrics.ServeHTTP(w, r) }},
	} {
		s.Handle(rt)
	}
	s.HandleDocument("/openapi.yaml", apispec.Document)
	var h http.Handler = s
	if o.Token != nil {
		h = requireToken(o.Token, h)
	}
	return timed(a.Metrics, recovered(audited(o, h)))
}

type problem struct {
	Status int    `json:"status"`
	Error  string `json:"error"`
}

func writeProblem(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, problem{code, msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		b.Reset()
		enc.Encode(problem{code, "encode answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b.Bytes())
}

func writeErr(w http.ResponseWriter, err error) {
	var ie *intent.Error
	if errors.As(err, &ie) {
		writeProblem(w, ie.Status, ie.Msg)
		return
	}
	writeProblem(w, http.StatusInternalServerError, err.Error())
}

// statusWriter remembers the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(c int) { s.code = c; s.ResponseWriter.WriteHeader(c) }

// Flush passes on (a streamed answer: the controller's watch, gRPC).
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// methodLabel bounds the metrics' method label: a client choosing the
// method must not choose the number of time series.
func methodLabel(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT":
		return m
	}
	return "other"
}

func timed(m *agent.Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{w, http.StatusOK}
		next.ServeHTTP(sw, r)
		m.APIDur.WithLabelValues(methodLabel(r.Method), strconv.Itoa(sw.code)).Observe(time.Since(start).Seconds())
	})
}

// recovered answers a panicking handler with a 500 (net/http would drop
// the connection without an answer) and logs its stack.
func recovered(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				slog.Error("api handler panic", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				writeProblem(w, http.StatusInternalServerError, "internal error (logged)")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// audited logs every request that may change state, with who sent it.
func audited(o Options, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" || r.Method == "HEAD" {
			next.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{w, http.StatusOK}
		next.ServeHTTP(sw, r)
		attrs := []any{"method", r.Method, "path", r.URL.Path, "status", sw.code, "peer", peer(r)}
		if o.Unauthenticated {
			attrs = append(attrs, "unauthenticated", true)
		}
		slog.Info("api request", attrs...)
	})
}

// apply takes one intent document, or {"intents": [doc, ...]} applied as
// one change (the schema has told the two apart: a batch is the only
// document with "intents").
func (s *server) apply(w http.ResponseWriter, r *http.Request, b []byte) {
	var batch struct {
		Intents []json.RawMessage `json:"intents"`
	}
	docs := []json.RawMessage{b}
	if json.Unmarshal(b, &batch) == nil && batch.Intents != nil {
		docs = batch.Intents
	}
	views, err := s.a.ApplyIntents(docs)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"intents": views})
}

func (s *server) list(w http.ResponseWriter, r *http.Request, _ []byte) {
	writeJSON(w, http.StatusOK, map[string]any{"intents": s.a.Intents()})
}

func (s *server) get(w http.ResponseWriter, r *http.Request, _ []byte) {
	v, err := s.a.Intent(r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *server) delete(w http.ResponseWriter, r *http.Request, _ []byte) {
	if err := s.a.DeleteIntent(r.PathValue("id")); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) stats(w http.ResponseWriter, r *http.Request, _ []byte) {
	st, err := s.a.Stats()
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *server) getOverload(w http.ResponseWriter, r *http.Request, _ []byte) {
	st, err := s.a.Overload()
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *server) putOverload(w http.ResponseWriter, r *http.Request, b []byte) {
	var req struct {
		Mode string `json:"mode"`
	}
	if err := json.Unmarshal(b, &req); err != nil {
		writeProblem(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.a.SetOverloadMode(req.Mode); err != nil {
		writeErr(w, err)
		return
	}
	s.getOverload(w, r, nil)
}

func (s *server) getAlt(w http.ResponseWriter, r *http.Request, _ []byte) {
	n, err := s.a.AltNodes()
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"altNodes": n})
}

func (s *server) putAlt(w http.ResponseWriter, r *http.Request, b []byte) {
	var req struct {
		AltNodes []agent.AltNodeDoc `json:"altNodes"`
	}
	if err := json.Unmarshal(b, &req); err != nil {
		writeProblem(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.a.SetAltNodes(req.AltNodes); err != nil {
		writeErr(w, err)
		return
	}
	s.getAlt(w, r, nil)
}
