package cisstub

import (
	"fmt"
	"testing"
	"time"
)

// The stand-in keeps at most MaxEvents events, dropping the oldest, and
// at most MaxTokens unexpired tokens.
func TestBounded(t *testing.T) {
	s := New("id", "secret")
	for i := range MaxEvents + 500 {
		s.Add(fmt.Sprintf("sa-%d", i))
	}
	if n := s.Events(); n != MaxEvents {
		t.Fatalf("%d events kept", n)
	}
	s.mu.Lock()
	first := s.events[0].SubaccountID
	s.mu.Unlock()
	if first != "sa-500" {
		t.Fatalf("the oldest kept is %s; want sa-500", first)
	}
	now := time.Now()
	s.now = func() time.Time { return now }
	for i := range MaxTokens {
		s.tokens[fmt.Sprint(i)] = now.Add(time.Minute)
	}
	if _, err := s.issue(); err == nil {
		t.Fatal("a token beyond MaxTokens was issued")
	}
	now = now.Add(2 * time.Minute) // they expired
	if _, err := s.issue(); err != nil {
		t.Fatalf("after the others expired: %v", err)
	}
	if len(s.tokens) != 1 {
		t.Fatalf("%d tokens kept", len(s.tokens))
	}
}
