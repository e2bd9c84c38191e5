package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// bodyLimits bound how a route reads its request body.
type bodyLimits struct {
	// max is the largest body read; a larger one is answered 413.
	max int64
	// deadline, when set, is how long the body may take to arrive, from
	// when the handler starts reading it (the server's read timeout bounds
	// the whole request anyway).
	deadline time.Duration
	// slots, when set, bounds how many bodies are read at once: a request
	// finding none free is answered 503 at once. Routes that read a body
	// before they know who sends it (the console's login form, `keb dev`'s
	// token endpoint) have them, so that slow senders cannot hold every
	// connection keb serves.
	slots chan struct{}
}

// Limits of the routes that read a body without a bearer token.
const (
	// maxFormBody bounds the console's login form and the dev token
	// request: a token is a few KB.
	maxFormBody = 16 << 10
	// FormSlots is how many such bodies are read at once.
	FormSlots = 64
	// maxUpgradeBody bounds an orchestration request.
	maxUpgradeBody = 64 << 10
)

// readBody reads req's whole body within l. When it cannot (too large, too
// slow, no slot free, a broken stream) it answers with an OSB error body,
// closes the connection without reading the rest, and returns ok false.
func readBody(w http.ResponseWriter, req *http.Request, l bodyLimits) (body []byte, ok bool) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, true
	}
	refuse := func(status int, key, description string) ([]byte, bool) {
		w.Header().Set("Connection", "close")
		writeError(w, status, key, description)
		return nil, false
	}
	tooLarge := func() ([]byte, bool) {
		return refuse(http.StatusRequestEntityTooLarge, "PayloadTooLarge", fmt.Sprintf("the request body is larger than %d bytes", l.max))
	}
	if req.ContentLength > l.max {
		return tooLarge() // refused before a byte of it is read
	}
	if l.slots != nil {
		select {
		case l.slots <- struct{}{}:
			defer func() { <-l.slots }()
		default:
			w.Header().Set("Retry-After", "1")
			return refuse(http.StatusServiceUnavailable, "ServiceUnavailable",
				"too many request bodies are being received at once; retry in a moment")
		}
	}
	var rc *http.ResponseController // only with a deadline: an accept pays nothing for it
	if l.deadline > 0 {
		rc = http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(l.deadline))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, l.max))
	if err != nil {
		var tooBig *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &tooBig):
			return tooLarge()
		case errors.As(err, &netErr) && netErr.Timeout():
			return refuse(http.StatusRequestTimeout, "RequestTimeout", "the request body did not arrive in time")
		default:
			return refuse(http.StatusBadRequest, "BadRequest", "reading the request body failed: "+err.Error())
		}
	}
	if l.deadline > 0 {
		// The body is in: a deadline passing while the handler works would
		// cancel the request's context (Go's server reads on in the
		// background to notice a client going away).
		_ = rc.SetReadDeadline(time.Time{})
	}
	return body, true
}

// bufferBody reads the body within l before next runs, so that next reads
// it from memory.
func bufferBody(l bodyLimits) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			body, ok := readBody(w, req, l)
			if !ok {
				return
			}
			if body != nil {
				req.Body = io.NopCloser(bytes.NewReader(body))
			}
			next.ServeHTTP(w, req)
		})
	}
}

// releaseUnreadBodies closes the connection of every answer given before
// the request's body was read to its end, without reading the rest. Go's
// server would otherwise read up to 256 KiB of it, before and after the
// handler, under the whole request's read timeout: a client sending a body
// slowly to a route that never reads it (/healthz, a refused request) would
// hold the connection for that long. Requests without a body (every poll)
// pass untouched.
func releaseUnreadBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.ContentLength == 0 || req.Body == nil || req.Body == http.NoBody {
			next.ServeHTTP(w, req)
			return
		}
		body := &trackedBody{ReadCloser: req.Body}
		req.Body = body
		next.ServeHTTP(&unreadBodyWriter{ResponseWriter: w, body: body}, req)
		if !body.eof {
			// After the handler the server still reads the unread body
			// before closing; a deadline in the past makes it give up.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		}
	})
}

// trackedBody notes whether the body was read to its end.
type trackedBody struct {
	io.ReadCloser
	eof bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	return n, err
}

// unreadBodyWriter asks for the connection to be closed when the answer
// starts before the body was read.
type unreadBodyWriter struct {
	http.ResponseWriter
	body        *trackedBody
	wroteHeader bool
}

func (u *unreadBodyWriter) WriteHeader(code int) {
	if !u.wroteHeader && code >= 200 {
		u.wroteHeader = true
		if !u.body.eof {
			u.Header().Set("Connection", "close")
		}
	}
	u.ResponseWriter.WriteHeader(code)
}

func (u *unreadBodyWriter) Write(b []byte) (int, error) {
	if !u.wroteHeader {
		u.WriteHeader(http.StatusOK)
	}
	return u.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (u *unreadBodyWriter) Unwrap() http.ResponseWriter { return u.ResponseWriter }
