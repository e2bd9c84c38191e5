package logging

import (
	"errors"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

func TestLogrusSink(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		log        func(l *logrus.Logger)
		wantLevel  logrus.Level
		wantFields logrus.Fields
	}{
		{
			name: "info goes to debug with names and values",
			log: func(l *logrus.Logger) {
				Logr(l).WithName("controller").WithName("infrasim").WithValues("a", 1).Info("starting", "b", "two")
			},
			wantLevel:  logrus.DebugLevel,
			wantFields: logrus.Fields{"logger": "controller.infrasim", "a": 1, "b": "two"},
		},
		{
			name:       "errors stay errors",
			log:        func(l *logrus.Logger) { Logr(l).Error(errors.New("boom"), "Reconciler error", "dangling") },
			wantLevel:  logrus.ErrorLevel,
			wantFields: logrus.Fields{"dangling": nil},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, hook := logtest.NewNullLogger()
			l.SetLevel(logrus.DebugLevel)
			tc.log(l)
			e := hook.LastEntry()
			if e == nil || e.Level != tc.wantLevel {
				t.Fatalf("entry %+v, want level %s", e, tc.wantLevel)
			}
			for k, v := range tc.wantFields {
				if got, ok := e.Data[k]; !ok || got != v {
					t.Errorf("field %s = %v (present %v), want %v", k, got, ok, v)
				}
			}
		})
	}
	if Logr(logrus.New()).V(1).Enabled() {
		t.Error("V(1) is enabled; controller-runtime's tracing would flood the log")
	}
}
