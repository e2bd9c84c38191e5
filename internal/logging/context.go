package logging

import (
	"context"

	"github.com/sirupsen/logrus"
)

type loggerKey struct{}

// WithLogger stores a request-scoped logger (carrying request_id) in ctx.
func WithLogger(ctx context.Context, log logrus.FieldLogger) context.Context {
	return context.WithValue(ctx, loggerKey{}, log)
}

// FromContext returns the request-scoped logger, or fallback outside a request.
func FromContext(ctx context.Context, fallback logrus.FieldLogger) logrus.FieldLogger {
	if l, ok := ctx.Value(loggerKey{}).(logrus.FieldLogger); ok {
		return l
	}
	return fallback
}

type accessFieldsKey struct{}

// AccessFields are fields a handler adds to its request's access line, so
// that what a request did (the operation it accepted) is logged on that one
// line rather than on a line of its own: at hundreds of accepts a second,
// formatting and writing a second line per request was a tenth of the
// broker's CPU time outside the database.
type AccessFields struct {
	fields logrus.Fields
}

// WithAccessFields gives the request behind ctx fields for its access line,
// which the access log reads back (AccessFieldsOf) once the handler has
// returned.
func WithAccessFields(ctx context.Context) context.Context {
	return context.WithValue(ctx, accessFieldsKey{}, &AccessFields{})
}

// AccessFieldsOf returns the access line's fields of the request behind ctx;
// nil when it has none.
func AccessFieldsOf(ctx context.Context) *AccessFields {
	f, _ := ctx.Value(accessFieldsKey{}).(*AccessFields)
	return f
}

// AddAccessFields adds fields to the access line of the request behind ctx,
// and reports false when it has none (the caller is not serving an HTTP
// request, or no access log runs): the caller then logs them itself. Only
// the request's own handler goroutine may call it, before it returns; the
// access line may keep fields itself, so the caller leaves it alone after.
func AddAccessFields(ctx context.Context, fields logrus.Fields) bool {
	f := AccessFieldsOf(ctx)
	if f == nil {
		return false
	}
	if f.fields == nil {
		f.fields = fields
		return true
	}
	for k, v := range fields {
		f.fields[k] = v
	}
	return true
}

// Fields returns the fields added, nil when none were (or f is nil).
func (f *AccessFields) Fields() logrus.Fields {
	if f == nil {
		return nil
	}
	return f.fields
}
