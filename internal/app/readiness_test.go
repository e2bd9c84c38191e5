package app

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/process"
)

// unansweredReader is a control plane that answers nothing before the
// caller's context ends: every read fails with the context's error, as
// client-go's does.
type unansweredReader struct{}

func (unansweredReader) Get(ctx context.Context, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	<-ctx.Done()
	return fmt.Errorf("reading from the control plane: %w", ctx.Err())
}

func (unansweredReader) List(ctx context.Context, _ client.ObjectList, _ ...client.ListOption) error {
	<-ctx.Done()
	return fmt.Errorf("listing in the control plane: %w", ctx.Err())
}

// A readiness check cut short by keb's own shutdown says so and warns of
// nothing (TestReplicaSIGTERM reads every "context canceled" in a stopping
// replica's log as a step cancelled by SIGTERM); a control plane that does
// not answer within the check's deadline is still a warning.
func TestControlPlaneCheckCutShortByShutdownWarnsOfNothing(t *testing.T) {
	log, hook := test.NewNullLogger()
	e := &engine{kcp: unansweredReader{}, namespace: "kcp-system", watcher: &process.Watcher{}, log: log}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	checks := e.checkControlPlane(ctx)
	if len(hook.AllEntries()) != 0 {
		t.Errorf("a check cut short by shutdown logged %q", hook.LastEntry().Message)
	}
	if checks[0].OK || checks[0].Detail != "not checked: keb is stopping" || checks[1].Required {
		t.Errorf("checks of a stopping keb: %+v", checks)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 0)
	defer cancel()
	checks = e.checkControlPlane(ctx)
	if len(hook.AllEntries()) != 1 || hook.LastEntry().Level != logrus.WarnLevel || !errors.Is(hook.LastEntry().Data[logrus.ErrorKey].(error), context.DeadlineExceeded) {
		t.Errorf("an unanswered control plane logged %d entries, want one warning with the deadline", len(hook.AllEntries()))
	}
	if checks[0].OK || checks[1].Required {
		t.Errorf("checks of an unanswered control plane: %+v", checks)
	}
}
