package api

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"path"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"edgeplane/control/internal/apispec"
)

// Router serves the operations of an OpenAPI document: the agent's
// (apispec) and the controller's (model). Every route must be one of the
// document's operations, and is checked as the operation asks before its
// handler runs: path parameters against their schemas (a value outside the
// grammar names nothing: 404), the body's media type (415), size (413),
// arrival within the read timeout (408), syntax and schema (400). What no
// route takes is answered as JSON: 404, or 405 with Allow.
type Router struct {
	doc      *openapi3.T
	maxBody  int64
	mux      *http.ServeMux
	patterns map[string]bool
}

// Route is one operation and its handler; body is the checked request
// body (nil when the operation has none).
type Route struct {
	Method, Path string
	Serve        func(w http.ResponseWriter, r *http.Request, body []byte)
}

// NewRouter serves doc's operations, bodies up to maxBody bytes.
func NewRouter(doc *openapi3.T, maxBody int64) *Router {
	return &Router{doc: doc, maxBody: maxBody, mux: http.NewServeMux(), patterns: map[string]bool{}}
}

// Handle registers a route; one the document does not have is a
// programming error (panic at start).
func (rt *Router) Handle(r Route) {
	op := apispec.OperationIn(rt.doc, r.Method, r.Path)
	if op == nil {
		panic(fmt.Sprintf("api: %s %s is not in the OpenAPI document", r.Method, r.Path))
	}
	params := apispec.PathParametersIn(rt.doc, r.Path, op)
	body := apispec.RequestSchema(op)
	pattern := r.Method + " " + r.Path
	rt.patterns[pattern] = true
	rt.mux.HandleFunc(pattern, func(w http.ResponseWriter, req *http.Request) {
		for name, schema := range params {
			if err := apispec.Check(schema, req.PathValue(name)); err != nil {
				writeProblem(w, http.StatusNotFound, fmt.Sprintf("no %s %q: %v", name, req.PathValue(name), err))
				return
			}
		}
		var b []byte
		if body != nil {
			var ok bool
			if b, ok = rt.readJSON(w, req, body); !ok {
				return
			}
		}
		r.Serve(w, req, b)
	})
}

// HandleDocument serves the document's own text at GET path.
func (rt *Router) HandleDocument(path string, text []byte) {
	pattern := "GET " + path
	rt.patterns[pattern] = true
	rt.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Write(text)
	})
}

// ServeHTTP answers what the mux has no route for as JSON: 404 for an
// unknown path (and for one the mux would redirect to its cleaned form),
// 405 with the mux's Allow header for a method the path does not have.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; p != canonical(p) {
		writeProblem(w, http.StatusNotFound, fmt.Sprintf("no such path: %s (not in canonical form: no empty, . or .. segments)", p))
		return
	}
	h, pattern := rt.mux.Handler(r)
	if rt.patterns[pattern] {
		rt.mux.ServeHTTP(w, r)
		return
	}
	rec := &headerRecorder{header: http.Header{}, code: http.StatusOK}
	h.ServeHTTP(rec, r)
	if rec.code == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", rec.header.Get("Allow"))
		writeProblem(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, rec.header.Get("Allow")))
		return
	}
	writeProblem(w, http.StatusNotFound, fmt.Sprintf("no such path: %s (GET /openapi.yaml lists them)", r.URL.Path))
}

// canonical is p as the mux would redirect it: cleaned, its trailing
// slash kept.
func canonical(p string) string {
	c := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// headerRecorder keeps the status and headers of the mux's own 404/405
// answers and drops their text/plain body.
type headerRecorder struct {
	header http.Header
	code   int
}

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (h *headerRecorder) WriteHeader(code int)        { h.code = code }

// readJSON reads and checks a request body; on a refusal it has answered.
func (rt *Router) readJSON(w http.ResponseWriter, r *http.Request, schema *openapi3.Schema) ([]byte, bool) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		writeProblem(w, http.StatusUnsupportedMediaType,
			fmt.Sprintf("Content-Type %q: the body must be application/json", r.Header.Get("Content-Type")))
		return nil, false
	}
	if r.ContentLength > rt.maxBody {
		writeProblem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes: at most %d", r.ContentLength, rt.maxBody))
		return nil, false
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, rt.maxBody))
	var tooLarge *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooLarge):
		writeProblem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", rt.maxBody))
		return nil, false
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		writeProblem(w, http.StatusRequestTimeout, "request body not received within the read timeout")
		return nil, false
	case err != nil:
		writeProblem(w, http.StatusBadRequest, fmt.Sprintf("request body: %v", err))
		return nil, false
	}
	v, err := apispec.Decode(b)
	if err != nil {
		writeProblem(w, http.StatusBadRequest, fmt.Sprintf("request body is not a JSON object: %v", err))
		return nil, false
	}
	if err := apispec.Check(schema, v); err != nil {
		writeProblem(w, http.StatusBadRequest, err.Error())
		return nil, false
	}
	return b, true
}
