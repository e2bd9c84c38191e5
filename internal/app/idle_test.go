package app_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/config"
)

// TestIdleConnectionPastTheServersIdleTimeout holds a keep-alive
// connection idle past keb's idle timeout (issue 38: the fault suite's
// unanswered PUT, suspected to be a connection keb closed at its idle
// timeout just as the client reused it). keb closes the idle connection,
// and a client that keeps idle connections far longer than keb does still
// gets its next PUT answered, on a new connection: Go's transport sees
// keb's close and never writes a request on a closed connection. What
// remains is a PUT written in the very instant keb closes; it needs a
// client whose idle timeout is at least keb's, which Go's default client
// (the fault suite's) is not: it gives its idle connections up first.
func TestIdleConnectionPastTheServersIdleTimeout(t *testing.T) {
	t.Parallel()
	if d := http.DefaultTransport.(*http.Transport).IdleConnTimeout; d >= config.Defaults.HTTP.IdleTimeout {
		t.Fatalf("Go's default client keeps idle connections %s, keb only %s: such a client reuses connections keb is closing",
			d, config.Defaults.HTTP.IdleTimeout)
	}
	b := setupWith(t, func(c *config.Config) { c.HTTP.IdleTimeout = 300 * time.Millisecond }, io.Discard)
	allClosed := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); b.closedConns.Load() < b.openedConns.Load(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: keb closed %d of its %d connections within a minute", what, b.closedConns.Load(), b.openedConns.Load())
			}
		}
	}

	// A raw keep-alive connection: answered once, then closed by keb with
	// nothing more on it.
	conn, r := b.rawConn("GET /healthz HTTP/1.1\r\nHost: keb\r\n\r\n")
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Close {
		t.Fatalf("GET /healthz: %d, close %v; want 200 on a connection kept alive", res.StatusCode, res.Close)
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("reading the idle connection: %v, want EOF (keb closes it at its idle timeout)", err)
	}
	allClosed("the raw connection")

	// A client keeping idle connections for an hour, keb 300 ms. Its
	// connections count their closes: the transport closes a connection
	// when it has read keb's close, after which it never reuses it.
	var dialed, dropped atomic.Int64
	dialer := &net.Dialer{}
	client := &http.Client{Transport: &http.Transport{IdleConnTimeout: time.Hour,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			dialed.Add(1)
			return &countingConn{Conn: c, closed: &dropped}, nil
		}}}
	b.expect(b.doWith(client, http.MethodPut, provisionPath("inst-idle-1"), provisionBody(azurePlanID, `{"name":"i1"}`,
		`"globalaccount_id":"ga-i1","subaccount_id":"sa-i1","user_id":"u"`)), http.StatusAccepted)
	allClosed("the client's connection")
	// The client learns of keb's close when its read loop gets to it, which
	// on a busy machine is not at once: only then is the next PUT sure to
	// take a new connection (a PUT written before that is the race above).
	for deadline := time.Now().Add(time.Minute); dropped.Load() < dialed.Load(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the client saw keb close %d of its %d connections within a minute", dropped.Load(), dialed.Load())
		}
	}
	opened := b.openedConns.Load()
	// doWith fails the test on a request without an answer (EOF).
	b.expect(b.doWith(client, http.MethodPut, provisionPath("inst-idle-2"), provisionBody(azurePlanID, `{"name":"i2"}`,
		`"globalaccount_id":"ga-i2","subaccount_id":"sa-i2","user_id":"u"`)), http.StatusAccepted)
	if n := b.openedConns.Load() - opened; n != 1 {
		t.Fatalf("the PUT after keb's idle timeout opened %d connections, want 1 (the idle one was closed)", n)
	}
}

// countingConn counts its first Close in closed.
type countingConn struct {
	net.Conn
	once   sync.Once
	closed *atomic.Int64
}

func (c *countingConn) Close() error {
	c.once.Do(func() { c.closed.Add(1) })
	return c.Conn.Close()
}
