// Package api is the northbound REST interface (the seed's NBI): intents in,
// statistics out. Handlers decode, call one agent function, encode; they
// never touch the maps. openapi.yaml documents every route.
package api

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"edgeplane/control/internal/agent"
	"edgeplane/control/internal/intent"
)

//go:embed openapi.yaml
var OpenAPI []byte

// maxBody bounds a request: an intent is a few hundred bytes, a batch of
// a thousand fits.
const maxBody = 1 << 20

// Handler serves the API for an agent.
func Handler(a *agent.Agent) http.Handler {
	mux := http.NewServeMux()
	h := &handlers{a}
	mux.HandleFunc("GET /v1/intents", h.list)
	mux.HandleFunc("POST /v1/intents", h.apply)
	mux.HandleFunc("GET /v1/intents/{id}", h.get)
	mux.HandleFunc("DELETE /v1/intents/{id}", h.delete)
	mux.HandleFunc("GET /v1/stats", h.stats)
	mux.HandleFunc("GET /v1/overload", h.getOverload)
	mux.HandleFunc("PUT /v1/overload", h.putOverload)
	mux.HandleFunc("GET /v1/alt-nodes", h.getAlt)
	mux.HandleFunc("PUT /v1/alt-nodes", h.putAlt)
	mux.HandleFunc("GET /openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Write(OpenAPI)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.Metrics.Registry, promhttp.HandlerOpts{}))
	return timed(a.Metrics, mux)
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(c int) { s.code = c; s.ResponseWriter.WriteHeader(c) }

func timed(m *agent.Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{w, 200}
		next.ServeHTTP(sw, r)
		m.APIDur.WithLabelValues(r.Method, strconv.Itoa(sw.code)).Observe(time.Since(start).Seconds())
	})
}

type handlers struct{ a *agent.Agent }

type problem struct {
	Status int    `json:"status"`
	Error  string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeErr(w http.ResponseWriter, err error) {
	var ie *intent.Error
	if errors.As(err, &ie) {
		writeJSON(w, ie.Status, problem{ie.Status, ie.Msg})
		return
	}
	writeJSON(w, 500, problem{500, err.Error()})
}

func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		return nil, &intent.Error{Status: 413, Msg: fmt.Sprintf("request body: %v", err)}
	}
	return b, nil
}

// apply takes one intent document, or {"intents": [doc, ...]} applied as
// one change.
func (h *handlers) apply(w http.ResponseWriter, r *http.Request) {
	b, err := readBody(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	docs := []json.RawMessage{b}
	var batch struct {
		Intents []json.RawMessage `json:"intents"`
	}
	if bytes.Contains(b, []byte(`"intents"`)) && json.Unmarshal(b, &batch) == nil && batch.Intents != nil {
		if len(batch.Intents) == 0 {
			writeErr(w, &intent.Error{Status: 400, Msg: "intents is empty"})
			return
		}
		docs = batch.Intents
	}
	views, err := h.a.ApplyIntents(docs)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"intents": views})
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{"intents": h.a.Intents()})
}

func (h *handlers) get(w http.ResponseWriter, r *http.Request) {
	v, err := h.a.Intent(r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, 200, v)
}

func (h *handlers) delete(w http.ResponseWriter, r *http.Request) {
	if err := h.a.DeleteIntent(r.PathValue("id")); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handlers) stats(w http.ResponseWriter, r *http.Request) {
	st, err := h.a.Stats()
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, 200, st)
}

func (h *handlers) getOverload(w http.ResponseWriter, r *http.Request) {
	st, err := h.a.Overload()
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, 200, st)
}

func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &intent.Error{Status: 400, Msg: err.Error()}
	}
	return nil
}

func (h *handlers) putOverload(w http.ResponseWriter, r *http.Request) {
	b, err := readBody(r)
	if err == nil {
		var req struct {
			Mode string `json:"mode"`
		}
		if err = decodeStrict(b, &req); err == nil {
			err = h.a.SetOverloadMode(req.Mode)
		}
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	h.getOverload(w, r)
}

func (h *handlers) getAlt(w http.ResponseWriter, r *http.Request) {
	n, err := h.a.AltNodes()
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, 200, map[string]any{"altNodes": n})
}

func (h *handlers) putAlt(w http.ResponseWriter, r *http.Request) {
	b, err := readBody(r)
	if err == nil {
		var req struct {
			AltNodes []agent.AltNodeDoc `json:"altNodes"`
		}
		if err = decodeStrict(b, &req); err == nil {
			err = h.a.SetAltNodes(req.AltNodes)
		}
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	h.getAlt(w, r)
}
