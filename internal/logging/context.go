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
