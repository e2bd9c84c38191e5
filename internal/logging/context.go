package logging

import (
	"context"
	"sync/atomic"

	"github.com/sirupsen/logrus"
)

type loggerKey struct{}

// WithLogger stores a request-scoped logger (carrying request_id) in ctx.
func WithLogger(ctx context.Context, log logrus.FieldLogger) context.Context {
	return context.WithValue(ctx, loggerKey{}, log)
}

// FromContext returns the request-scoped logger, or fallback outside a request.
func FromContext(ctx context.Context, fallback logrus.FieldLogger) logrus.FieldLogger {
	switch l := ctx.Value(loggerKey{}).(type) {
	case *requestContext:
		return l.logger()
	case logrus.FieldLogger:
		return l
	}
	return fallback
}

// LevelEnabled reports whether the logger FromContext returns would write a
// line at level, without building a request's logger to ask it.
func LevelEnabled(ctx context.Context, fallback logrus.FieldLogger, level logrus.Level) bool {
	switch l := ctx.Value(loggerKey{}).(type) {
	case *requestContext:
		return levelEnabled(l.base, level)
	case logrus.FieldLogger:
		return levelEnabled(l, level)
	}
	return levelEnabled(fallback, level)
}

// WithRequest gives the HTTP request behind ctx its logger (log with the
// fields request_id and, when the platform sent one, request_identity) and
// the fields of its access line (AccessFieldsOf), in one context value. The
// logger is built when something first asks for it: most requests (polls,
// catalog reads) log nothing, and building it for each was a tenth of what
// the catalog's middleware allocated.
func WithRequest(ctx context.Context, log logrus.FieldLogger, requestID, requestIdentity string) context.Context {
	return &requestContext{Context: ctx, base: log, id: requestID, identity: requestIdentity}
}

// RequestID is the ID WithRequest gave the request behind ctx; empty
// outside one.
func RequestID(ctx context.Context) string {
	if c, ok := ctx.Value(loggerKey{}).(*requestContext); ok {
		return c.id
	}
	return ""
}

// requestContext is WithRequest's context: it answers the logger's and the
// access fields' keys itself and hands every other key, Done and Err to the
// request's own context (so that context.WithCancel below it still finds
// net/http's cancellation without a goroutine of its own).
type requestContext struct {
	context.Context
	base         logrus.FieldLogger
	id, identity string
	log          atomic.Pointer[logrus.Entry]
	access       AccessFields
}

func (c *requestContext) Value(key any) any {
	switch key.(type) {
	case loggerKey:
		return c
	case accessFieldsKey:
		return &c.access
	}
	return c.Context.Value(key)
}

// logger builds the request's logger once; goroutines of one request that
// race to build it get the same one.
func (c *requestContext) logger() logrus.FieldLogger {
	if l := c.log.Load(); l != nil {
		return l
	}
	fields := logrus.Fields{"request_id": c.id}
	if c.identity != "" {
		fields["request_identity"] = c.identity
	}
	c.log.CompareAndSwap(nil, c.base.WithFields(fields))
	return c.log.Load()
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
