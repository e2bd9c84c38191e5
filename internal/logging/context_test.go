package logging

import (
	"context"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
)

// A request's logger carries its ID and identity, is the same for every
// goroutine of the request, and is still found (with its access fields)
// under contexts derived from the request's; a logger set below it wins.
func TestWithRequest(t *testing.T) {
	t.Parallel()
	log, hook := test.NewNullLogger()
	parent, cancel := context.WithCancel(t.Context())
	ctx := WithRequest(parent, log, "rid-1", "ident-1")
	derived, stop := context.WithCancel(context.WithValue(ctx, struct{}{}, 1))
	defer stop()

	loggers := make([]logrus.FieldLogger, 8)
	var wg sync.WaitGroup
	for i := range loggers {
		wg.Go(func() { loggers[i] = FromContext(derived, nil) })
	}
	wg.Wait()
	for _, l := range loggers[1:] {
		if l != loggers[0] {
			t.Fatalf("goroutines of one request got different loggers")
		}
	}
	loggers[0].Info("x")
	if e := hook.LastEntry(); e == nil || e.Data["request_id"] != "rid-1" || e.Data["request_identity"] != "ident-1" {
		t.Errorf("line %v, want request_id and request_identity", e)
	}
	if RequestID(derived) != "rid-1" || RequestID(t.Context()) != "" {
		t.Errorf("RequestID = %q, %q", RequestID(derived), RequestID(t.Context()))
	}
	if !AddAccessFields(derived, logrus.Fields{"accepted": "provisioning"}) || AccessFieldsOf(ctx).Fields()["accepted"] != "provisioning" {
		t.Errorf("access fields added below the request are not the request's")
	}
	if LevelEnabled(ctx, nil, logrus.DebugLevel) || !LevelEnabled(ctx, nil, logrus.InfoLevel) {
		t.Errorf("LevelEnabled does not follow the request's logger (level info)")
	}

	other := logrus.New()
	if FromContext(WithLogger(derived, other), nil) != other {
		t.Errorf("a logger set below the request's is not the one used")
	}

	// The request's cancellation reaches contexts derived from it.
	cancel()
	<-derived.Done()

	hook.Reset()
	if l := FromContext(WithRequest(t.Context(), log, "rid-2", ""), nil); l == nil {
		t.Fatal("no logger")
	} else if l.Info("y"); hook.LastEntry().Data["request_identity"] != nil {
		t.Errorf("request_identity logged without one: %v", hook.LastEntry().Data)
	}
}
