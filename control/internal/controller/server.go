package controller

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"edgeplane/control/internal/api"
	"edgeplane/control/internal/apispec"
	"edgeplane/control/model"
)

// MaxBody bounds a request body: one node with 64K subscribers is about
// 8 MiB of JSON.
const MaxBody = 64 << 20

type route struct {
	method, path string
	serve        func(w http.ResponseWriter, r *http.Request, body []byte)
}

type server struct {
	st       *Store
	mux      *http.ServeMux
	patterns map[string]bool
}

// Handler serves the northbound of model/openapi.yaml on st, behind the
// listener's authentication (api.Options).
func Handler(st *Store, o api.Options) http.Handler {
	s := &server{st: st, mux: http.NewServeMux(), patterns: map[string]bool{}}
	for _, rt := range []route{
		{"GET", "/v1/state", s.state},
		{"GET", "/v1/nodes/{node}", s.node},
		{"GET", "/v1/nodes/{node}/status", s.status},
		{"POST", "/v1/plan", s.plan},
		{"POST", "/v1/apply", s.apply},
		{"POST", "/v1/rollback", s.rollback},
		{"GET", "/v1/revisions", s.revisions},
		{"GET", "/v1/watch", s.watch},
	} {
		s.handle(rt)
	}
	s.mux.HandleFunc("GET /openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Write(model.Document)
	})
	s.patterns["GET /openapi.yaml"] = true
	return api.Protect(o, s)
}

// handle registers a route with the checks its operation in the document
// asks for: path parameters (404 for a name outside the grammar: it names
// nothing), the body's media type (415), size (413), syntax and schema
// (400).
func (s *server) handle(rt route) {
	op := model.Operation(rt.method, rt.path)
	if op == nil {
		panic(fmt.Sprintf("controller: %s %s is not in openapi.yaml", rt.method, rt.path))
	}
	params := pathParameters(rt.path, op)
	body := apispec.RequestSchema(op)
	pattern := rt.method + " " + rt.path
	s.patterns[pattern] = true
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		for name, schema := range params {
			if err := apispec.Check(schema, r.PathValue(name)); err != nil {
				api.WriteProblem(w, http.StatusNotFound, fmt.Sprintf("no %s %q: %v", name, r.PathValue(name), err))
				return
			}
		}
		var b []byte
		if body != nil {
			var ok bool
			if b, ok = readBody(w, r, body); !ok {
				return
			}
		}
		rt.serve(w, r, b)
	})
}

// pathParameters are op's path parameters (and its path item's) in this
// document, by name.
func pathParameters(path string, op *openapi3.Operation) map[string]*openapi3.Schema {
	var params openapi3.Parameters
	if item := model.Spec().Paths.Find(path); item != nil {
		params = append(params, item.Parameters...)
	}
	params = append(params, op.Parameters...)
	out := map[string]*openapi3.Schema{}
	for _, p := range params {
		if p.Value != nil && p.Value.In == openapi3.ParameterInPath && p.Value.Schema != nil {
			out[p.Value.Name] = p.Value.Schema.Value
		}
	}
	return out
}

// ServeHTTP answers what no route takes as JSON: 405 with Allow for a
// method a path does not have, 404 otherwise.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, pattern := s.mux.Handler(r)
	if s.patterns[pattern] {
		s.mux.ServeHTTP(w, r)
		return
	}
	var allow []string
	for _, m := range []string{"GET", "POST", "PUT", "DELETE"} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := s.mux.Handler(probe); s.patterns[p] {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", joinComma(allow))
		api.WriteProblem(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, joinComma(allow)))
		return
	}
	api.WriteProblem(w, http.StatusNotFound, fmt.Sprintf("no such path: %s (GET /openapi.yaml lists them)", r.URL.Path))
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

func readBody(w http.ResponseWriter, r *http.Request, schema *openapi3.Schema) ([]byte, bool) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		api.WriteProblem(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q: the body must be application/json", r.Header.Get("Content-Type")))
		return nil, false
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooLarge *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooLarge):
		api.WriteProblem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", MaxBody))
		return nil, false
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		api.WriteProblem(w, http.StatusRequestTimeout, "request body not received within the read timeout")
		return nil, false
	case err != nil:
		api.WriteProblem(w, http.StatusBadRequest, fmt.Sprintf("request body: %v", err))
		return nil, false
	}
	v, err := apispec.Decode(b)
	if err != nil {
		api.WriteProblem(w, http.StatusBadRequest, fmt.Sprintf("request body is not JSON: %v", err))
		return nil, false
	}
	if err := apispec.Check(schema, v); err != nil {
		api.WriteProblem(w, http.StatusBadRequest, err.Error())
		return nil, false
	}
	return b, true
}

// fail maps a store error to its status.
func fail(w http.ResponseWriter, err error) {
	code := http.StatusServiceUnavailable // etcd unreachable, no leader, timeouts
	switch {
	case errors.Is(err, ErrBadChange):
		code = http.StatusBadRequest
	case errors.Is(err, ErrConflict):
		code = http.StatusConflict
	case errors.Is(err, ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, ErrCompacted):
		code = http.StatusGone
	}
	if code == http.StatusServiceUnavailable {
		slog.Warn("desired state store", "err", err)
		err = fmt.Errorf("the desired state store (etcd) did not answer: %v", err)
	}
	api.WriteProblem(w, code, err.Error())
}

func (s *server) state(w http.ResponseWriter, r *http.Request, _ []byte) {
	st, err := s.st.State(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, st)
}

func (s *server) node(w http.ResponseWriter, r *http.Request, _ []byte) {
	d, err := s.st.Node(r.Context(), r.PathValue("node"))
	if err != nil {
		fail(w, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, d)
}

func (s *server) status(w http.ResponseWriter, r *http.Request, _ []byte) {
	st, err := s.st.Status(r.Context(), r.PathValue("node"))
	if err != nil {
		fail(w, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, st)
}

func decodeChange(w http.ResponseWriter, b []byte) (model.ChangeRequest, bool) {
	var req model.ChangeRequest
	if err := json.Unmarshal(b, &req); err != nil {
		api.WriteProblem(w, http.StatusBadRequest, err.Error())
		return req, false
	}
	return req, true
}

func (s *server) plan(w http.ResponseWriter, r *http.Request, b []byte) {
	req, ok := decodeChange(w, b)
	if !ok {
		return
	}
	p, err := s.st.Plan(r.Context(), req)
	if err != nil {
		fail(w, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, p)
}

func (s *server) apply(w http.ResponseWriter, r *http.Request, b []byte) {
	req, ok := decodeChange(w, b)
	if !ok {
		return
	}
	a, err := s.st.Apply(r.Context(), req)
	if err != nil {
		fail(w, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, a)
}

func (s *server) rollback(w http.ResponseWriter, r *http.Request, b []byte) {
	var req model.RollbackRequest
	if err := json.Unmarshal(b, &req); err != nil {
		api.WriteProblem(w, http.StatusBadRequest, err.Error())
		return
	}
	a, err := s.st.Rollback(r.Context(), req)
	if err != nil {
		fail(w, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, a)
}

func (s *server) revisions(w http.ResponseWriter, r *http.Request, _ []byte) {
	var limit int64
	if q := r.URL.Query().Get("limit"); q != "" {
		n, err := strconv.ParseInt(q, 10, 64)
		if err != nil || n < 0 {
			api.WriteProblem(w, http.StatusBadRequest, "limit: want a count")
			return
		}
		limit = n
	}
	l, err := s.st.Revisions(r.Context(), limit)
	if err != nil {
		fail(w, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, l)
}

var noDeadline time.Time

// watch streams WatchEvents as JSON lines, flushed one by one; it ends
// when the client goes (or the server shuts down).
func (s *server) watch(w http.ResponseWriter, r *http.Request, _ []byte) {
	rc := http.NewResponseController(w)
	// A watch outlives the server's write timeout by design.
	rc.SetWriteDeadline(noDeadline)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	err := s.st.Watch(r.Context(), func(ev model.WatchEvent) error {
		if err := enc.Encode(ev); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		slog.Warn("watch ended", "err", err)
	}
}
