// Package logtest captures a server's JSON log lines for tests that assert
// what an operator's log search would find.
package logtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"sync"
	"testing"
)

// Buffer is a log sink written by the server's goroutines.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is the whole log, in any format; call it after the server is
// closed, so that no request is still logging.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Lines decodes every line written so far; a line that is not a JSON object
// fails the test.
func (s *Buffer) Lines(t testing.TB) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(s.b.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, sc.Text())
		}
		out = append(out, rec)
	}
	return out
}
