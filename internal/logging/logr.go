package logging

import (
	"fmt"

	"github.com/go-logr/logr"
	"github.com/sirupsen/logrus"
)

// Logr returns a logr.Logger writing through log (for controller-runtime and
// client-go).
//
// logrusSink routes controller-runtime's logr output (manager lifecycle,
// reconciler errors) into the simulator's logrus logger. controller-runtime's
// informational messages are lifecycle chatter, so they go to Debug; errors
// stay errors.
type logrusSink struct {
	log    logrus.FieldLogger
	name   string
	fields logrus.Fields
}

var _ logr.LogSink = (*logrusSink)(nil)

func Logr(log logrus.FieldLogger) logr.Logger {
	return logr.New(&logrusSink{log: log, fields: logrus.Fields{}})
}

func (s *logrusSink) Init(logr.RuntimeInfo) {}

func (s *logrusSink) Enabled(level int) bool {
	// Only V(0) is forwarded: higher verbosity is controller-runtime's tracing.
	return level <= 0
}

func (s *logrusSink) Info(_ int, msg string, kv ...any) {
	s.entry(kv).Debug(msg)
}

func (s *logrusSink) Error(err error, msg string, kv ...any) {
	s.entry(kv).WithError(err).Error(msg)
}

func (s *logrusSink) WithValues(kv ...any) logr.LogSink {
	return &logrusSink{log: s.log, name: s.name, fields: withPairs(s.fields, kv)}
}

func (s *logrusSink) WithName(name string) logr.LogSink {
	if s.name != "" {
		name = s.name + "." + name
	}
	return &logrusSink{log: s.log, name: name, fields: s.fields}
}

func (s *logrusSink) entry(kv []any) logrus.FieldLogger {
	fields := withPairs(s.fields, kv)
	if s.name != "" {
		fields["logger"] = s.name
	}
	return s.log.WithFields(fields)
}

// withPairs returns a copy of base with logr's key/value pairs added; a
// dangling key gets a nil value rather than being dropped.
func withPairs(base logrus.Fields, kv []any) logrus.Fields {
	out := make(logrus.Fields, len(base)+len(kv)/2)
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		var v any
		if i+1 < len(kv) {
			v = kv[i+1]
		}
		out[fmt.Sprint(kv[i])] = v
	}
	return out
}
