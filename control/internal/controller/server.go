package controller

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"edgeplane/control/internal/api"
	"edgeplane/control/model"
)

// MaxBody bounds a request body: one node with 64K subscribers is about
// 8 MiB of JSON.
const MaxBody = 64 << 20

type server struct {
	*api.Router
	st *Store
}

// Handler serves the northbound of model/openapi.yaml on st, REST and
// gRPC (model/edgeplane.proto, HTTP/2), behind the listener's
// authentication (api.Options); its server needs HTTP/2 without TLS
// (Protocols) for gRPC on a Unix socket or a token-authenticated TCP port.
func Handler(st *Store, o api.Options) http.Handler {
	s := &server{Router: api.NewRouter(model.Spec(), MaxBody), st: st}
	for _, rt := range []struct {
		method, path string
		serve        func(w http.ResponseWriter, r *http.Request, body []byte)
	}{
		{"GET", "/v1/state", s.state},
		{"GET", "/v1/nodes/{node}", s.node},
		{"GET", "/v1/nodes/{node}/status", s.status},
		{"POST", "/v1/plan", s.plan},
		{"POST", "/v1/apply", s.apply},
		{"POST", "/v1/rollback", s.rollback},
		{"GET", "/v1/revisions", s.revisions},
		{"GET", "/v1/watch", s.watch},
	} {
		s.Handle(api.Route{Method: rt.method, Path: rt.path, Serve: rt.serve})
	}
	s.HandleDocument("/openapi.yaml", model.Document)
	return api.Protect(o, withGRPC(GRPC(st), s))
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
