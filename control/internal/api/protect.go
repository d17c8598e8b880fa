package api

import "net/http"

// Protect wraps another edgeplane HTTP API (the controller's) in what this
// package gives the agent's: the bearer token when the listener has one,
// the audit log of every change with its sender, and a 500 for a handler
// that panics.
func Protect(o Options, h http.Handler) http.Handler {
	if o.Token != nil {
		h = requireToken(o.Token, h)
	}
	return recovered(audited(o, h))
}

// WriteProblem answers an error as application/json {"status", "error"}.
func WriteProblem(w http.ResponseWriter, code int, msg string) { writeProblem(w, code, msg) }

// WriteJSON answers v as indented application/json.
func WriteJSON(w http.ResponseWriter, code int, v any) { writeJSON(w, code, v) }
