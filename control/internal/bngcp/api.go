package bngcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The REST API of the control plane (served on the agent's listeners:
// a Unix socket of mode 0660 by default, TCP with a bearer token):
//
//	GET    /v1/bng/sessions[?type=&user=&mac=&port=&ipv4=&state=]
//	GET    /v1/bng/sessions/{id}
//	DELETE /v1/bng/sessions/{id}                 clear one
//	DELETE /v1/bng/sessions?user=|mac=|port=|type=|all=true   clear many
//	PUT    /v1/bng/sessions/{id}/profile  {"profile": "gold"}
//	GET    /v1/bng/stats                         sessions, pools, counters
//	GET    /v1/bng/counters                      {protocol: {event: n}}
//	GET    /metrics                              Prometheus
//
// Handlers parse, call one business function (ops.go) and encode.

// Metrics is the server's Prometheus registry holder.
func (s *Server) Metrics() *Metrics { return s.metrics }

type problem struct {
	Status int    `json:"status"`
	Error  string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		b.Reset()
		enc.Encode(problem{code, err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b.Bytes())
}

func writeProblem(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, problem{code, msg})
}

// maxBody bounds a request body (a profile name).
const maxBody = 4096

// Handler serves the API.
func Handler(s *Server) http.Handler {
	mux := http.NewServeMux()
	timeout := func(r *http.Request) (context.Context, context.CancelFunc) {
		return context.WithTimeout(r.Context(), 10*time.Second)
	}
	mux.HandleFunc("GET /v1/bng/sessions", func(w http.ResponseWriter, r *http.Request) {
		f, err := filterFromQuery(r, false)
		if err != nil {
			writeProblem(w, http.StatusBadRequest, err.Error())
			return
		}
		ctx, cancel := timeout(r)
		defer cancel()
		list, err := s.Sessions(ctx, f)
		if err != nil {
			writeProblem(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		if list == nil {
			list = []SessionInfo{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"sessions": list, "count": len(list)})
	})
	mux.HandleFunc("GET /v1/bng/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := ParseID(r.PathValue("id"))
		if err != nil {
			writeProblem(w, http.StatusNotFound, err.Error())
			return
		}
		ctx, cancel := timeout(r)
		defer cancel()
		list, err := s.Sessions(ctx, Filter{ID: id})
		if err != nil {
			writeProblem(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		if len(list) == 0 {
			writeProblem(w, http.StatusNotFound, "no session "+r.PathValue("id"))
			return
		}
		writeJSON(w, http.StatusOK, list[0])
	})
	mux.HandleFunc("DELETE /v1/bng/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := ParseID(r.PathValue("id"))
		if err != nil {
			writeProblem(w, http.StatusNotFound, err.Error())
			return
		}
		ctx, cancel := timeout(r)
		defer cancel()
		n, err := s.Clear(ctx, Filter{ID: id})
		if errors.Is(err, ErrNoSession) {
			writeProblem(w, http.StatusNotFound, "no session "+r.PathValue("id"))
			return
		}
		if err != nil {
			writeProblem(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"cleared": n})
	})
	mux.HandleFunc("DELETE /v1/bng/sessions", func(w http.ResponseWriter, r *http.Request) {
		f, err := filterFromQuery(r, true)
		if err != nil {
			writeProblem(w, http.StatusBadRequest, err.Error())
			return
		}
		ctx, cancel := timeout(r)
		defer cancel()
		n, err := s.Clear(ctx, f)
		if err != nil {
			writeProblem(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"cleared": n})
	})
	mux.HandleFunc("PUT /v1/bng/sessions/{id}/profile", func(w http.ResponseWriter, r *http.Request) {
		id, err := ParseID(r.PathValue("id"))
		if err != nil {
			writeProblem(w, http.StatusNotFound, err.Error())
			return
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			writeProblem(w, http.StatusUnsupportedMediaType, "the body is application/json")
			return
		}
		var body struct {
			Profile string `json:"profile"`
		}
		dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil || body.Profile == "" {
			writeProblem(w, http.StatusBadRequest, `want {"profile": "<name>"}`)
			return
		}
		ctx, cancel := timeout(r)
		defer cancel()
		n, err := s.ChangeProfile(ctx, Filter{ID: id}, body.Profile)
		switch {
		case errors.Is(err, ErrNoSession):
			writeProblem(w, http.StatusNotFound, "no session "+r.PathValue("id")+" that is up")
		case err != nil && s.profiles[body.Profile] == nil:
			writeProblem(w, http.StatusBadRequest, err.Error())
		case err != nil:
			writeProblem(w, http.StatusBadGateway, err.Error())
		default:
			writeJSON(w, http.StatusOK, map[string]any{"changed": n, "profile": body.Profile})
		}
	})
	mux.HandleFunc("GET /v1/bng/stats", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := timeout(r)
		defer cancel()
		st, err := s.Stats(ctx)
		if err != nil {
			writeProblem(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, st)
	})
	mux.HandleFunc("GET /v1/bng/counters", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Counters())
	})
	metrics := promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{})
	mux.Handle("GET /metrics", metrics)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
	})
	return http.MaxBytesHandler(mux, maxBody)
}

// filterFromQuery reads a session filter; a clearing one must name
// something (or all=true): an empty DELETE clears nothing by accident.
func filterFromQuery(r *http.Request, clearing bool) (Filter, error) {
	q := r.URL.Query()
	f := Filter{Type: q.Get("type"), User: q.Get("user"), MAC: q.Get("mac"), Port: q.Get("port"), State: q.Get("state")}
	for k := range q {
		switch k {
		case "type", "user", "mac", "port", "state", "ipv4", "all":
		default:
			return f, errors.New("unknown parameter " + k)
		}
	}
	if f.Type != "" && f.Type != "pppoe" && f.Type != "ipoe" {
		return f, errors.New("type is pppoe or ipoe")
	}
	if v := q.Get("ipv4"); v != "" {
		a, err := netip.ParseAddr(v)
		if err != nil || !a.Is4() {
			return f, errors.New("ipv4 is an IPv4 address")
		}
		f.IPv4 = a
	}
	if clearing && f == (Filter{}) && q.Get("all") != "true" {
		return f, errors.New("name the sessions to clear (user, mac, port, type, ipv4) or all=true")
	}
	return f, nil
}
