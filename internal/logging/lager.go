package logging

import (
	"encoding/json"
	"fmt"
	"strings"

	"code.cloudfoundry.org/lager/v3"
	"github.com/sirupsen/logrus"
)

// LagerSink forwards brokerapi's lager records to logrus, so that keb has one
// log stream and one format.
type LagerSink struct {
	log logrus.FieldLogger
}

// NewLager returns a lager logger named component that writes through log.
func NewLager(component string, log logrus.FieldLogger) lager.Logger {
	l := lager.NewLogger(component)
	l.RegisterSink(&LagerSink{log: log})
	return l
}

// Log implements lager.Sink.
func (s *LagerSink) Log(f lager.LogFormat) {
	fields := logrus.Fields{"source": f.Source}
	for k, v := range f.Data {
		switch k {
		case correlationIDKey:
			// keb hands brokerapi its own request ID as the correlation ID,
			// so brokerapi's lines join the request's trace under keb's key.
			fields["request_id"] = v
			continue
		case requestIdentityKey:
			continue // keb's request logger carries it as request_identity
		}
		// brokerapi logs whole request details; their context may carry
		// sm_operator_credentials, which must never reach a log.
		fields[k] = redact(v)
	}
	entry := s.log.WithFields(fields)
	if f.Error != nil {
		entry = entry.WithError(f.Error)
	}
	switch f.LogLevel {
	case lager.DEBUG, lager.INFO:
		// brokerapi's info lines ("starting-check-for-operation", "done-…")
		// repeat per request what keb's access log says once.
		entry.Debug(f.Message)
	case lager.ERROR, lager.FATAL:
		// brokerapi logs every 4xx it answers as an error; keb's own access
		// log reports failures, so these are warnings, not pages.
		entry.Warn(f.Message)
	default:
		entry.Info(f.Message)
	}
}

// brokerapi's lager data keys (middlewares.CorrelationIDKey and
// RequestIdentityKey).
const (
	correlationIDKey   = "correlation-id"
	requestIdentityKey = "requestIdentity"
)

// secretKeys are JSON keys whose values are replaced before logging.
var secretKeys = map[string]bool{
	"sm_operator_credentials": true, "clientsecret": true, "client_secret": true,
	"password": true, "token": true, "access_token": true, "authorization": true,
}

// redact returns v as plain JSON data with every secret value replaced, raw
// request context and parameters replaced by their size, and long strings
// cut.
// json.RawMessage fields (OSB context and parameters) are decoded first so
// that secrets inside them are found too.
func redact(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return "[unloggable]"
	}
	var data any
	if err := json.Unmarshal(b, &data); err != nil {
		return "[unloggable]"
	}
	return redactValue(data)
}

// rawRequestKeys are the request fields brokerapi logs whole: a client's
// OSB context and parameters. Their size is logged, not their content, so
// that one rejected request cannot write a line as long as its body.
var rawRequestKeys = map[string]bool{"context": true, "parameters": true}

// maxLoggedValue bounds any other string brokerapi logs.
const maxLoggedValue = 256

func redactValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			switch {
			case secretKeys[strings.ToLower(k)]:
				t[k] = "[REDACTED]"
			case rawRequestKeys[k] && val != nil:
				b, _ := json.Marshal(val)
				t[k] = fmt.Sprintf("[omitted: %d bytes]", len(b))
			default:
				t[k] = redactValue(val)
			}
		}
		return t
	case []any:
		for i := range t {
			t[i] = redactValue(t[i])
		}
		return t
	case string:
		if len(t) > maxLoggedValue {
			return fmt.Sprintf("%s…[%d bytes]", t[:maxLoggedValue], len(t))
		}
		return t
	default:
		return v
	}
}
