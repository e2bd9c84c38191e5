package broker

import (
	"context"
	"time"
)

type regionKey struct{}
type hintsKey struct{}

// ContextWithRegion records the platform region of the request: the
// {region} segment of /oauth/{region}/v2/...
func ContextWithRegion(ctx context.Context, region string) context.Context {
	return context.WithValue(ctx, regionKey{}, region)
}

func regionFrom(ctx context.Context) string {
	r, _ := ctx.Value(regionKey{}).(string)
	return r
}

// Hints carries what the broker wants said in response headers that
// brokerapi does not model, such as Retry-After.
type Hints struct {
	RetryAfter time.Duration
}

// ContextWithHints gives the broker a place to leave response hints for the
// HTTP layer, which reads them before the status line is written.
func ContextWithHints(ctx context.Context) (context.Context, *Hints) {
	h := &Hints{}
	return context.WithValue(ctx, hintsKey{}, h), h
}

func hintsFrom(ctx context.Context) *Hints {
	if h, ok := ctx.Value(hintsKey{}).(*Hints); ok {
		return h
	}
	return &Hints{}
}
