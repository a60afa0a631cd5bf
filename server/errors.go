package server

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/distlock/distlock/server/api"
)

// apiError is an error answer: an HTTP status and the JSON error body.
type apiError struct {
	status int
	detail api.ErrorDetail
}

func (e *apiError) Error() string { return e.detail.Code + ": " + e.detail.Message }

func newError(status int, code, msg string) *apiError {
	return &apiError{status: status, detail: api.ErrorDetail{Code: code, Message: msg}}
}

func badRequest(arg, msg string) *apiError {
	e := newError(http.StatusBadRequest, api.CodeInvalidArgument, msg)
	e.detail.Arg = arg
	return e
}

func backendUnavailable(op string, err error) *apiError {
	return newError(http.StatusServiceUnavailable, api.CodeBackendUnavailable, "the lock engine failed during "+op+": "+err.Error())
}

func shuttingDown() *apiError {
	e := newError(http.StatusServiceUnavailable, api.CodeShuttingDown, "the server is shutting down; retry later, or on another server")
	e.detail.RetryMs = 1000
	return e
}

// writeError writes an error answer.
func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	switch e.status {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="distlock"`)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if e.detail.RetryMs > 0 {
			h.Set("Retry-After", strconv.FormatInt(max(1, (e.detail.RetryMs+999)/1000), 10))
		}
	}
	writeJSON(w, e.status, api.ErrorBody{Error: e.detail})
}

// writeJSON writes v as the JSON answer with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}
