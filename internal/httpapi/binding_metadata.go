package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// bindingMetadata adds OSB 2.17's binding metadata to a bind's and a get
// binding's answer: {"metadata": {"expires_at": ...}}, copied from
// credentials.expires_at. brokerapi v10's response types predate the
// field, so it is added here rather than by the broker.
func bindingMetadata(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !strings.Contains(req.URL.Path, "/service_bindings/") || strings.HasSuffix(req.URL.Path, "/last_operation") ||
			(req.Method != http.MethodPut && req.Method != http.MethodGet) {
			next.ServeHTTP(w, req)
			return
		}
		mw := &metadataWriter{ResponseWriter: w}
		next.ServeHTTP(mw, req)
		mw.flush()
	})
}

// metadataWriter holds back a 200 or 201 answer until flush adds the
// metadata; other answers pass straight through.
type metadataWriter struct {
	http.ResponseWriter
	status int
	buf    *bytes.Buffer
}

func (m *metadataWriter) WriteHeader(code int) {
	if m.status != 0 {
		return
	}
	m.status = code
	if code == http.StatusOK || code == http.StatusCreated {
		m.buf = &bytes.Buffer{}
		return
	}
	m.ResponseWriter.WriteHeader(code)
}

func (m *metadataWriter) Write(b []byte) (int, error) {
	if m.status == 0 {
		m.WriteHeader(http.StatusOK)
	}
	if m.buf != nil {
		return m.buf.Write(b)
	}
	return m.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (m *metadataWriter) Unwrap() http.ResponseWriter { return m.ResponseWriter }

func (m *metadataWriter) flush() {
	if m.buf == nil {
		return
	}
	out := m.buf.Bytes()
	var body map[string]any
	if err := json.Unmarshal(out, &body); err == nil {
		if creds, ok := body["credentials"].(map[string]any); ok && creds["expires_at"] != nil {
			body["metadata"] = map[string]any{"expires_at": creds["expires_at"]}
			if b, err := json.Marshal(body); err == nil {
				out = append(b, '\n')
			}
		}
	}
	m.Header().Del("Content-Length")
	m.ResponseWriter.WriteHeader(m.status)
	_, _ = m.ResponseWriter.Write(out)
}
