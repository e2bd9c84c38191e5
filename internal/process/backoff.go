package process

import "time"

// backoff is the wait after the n-th failure in a row: one second doubled n
// times (at most ten times), capped at limit. Step errors (n counts from 1:
// 2 s, 4 s, 8 s …), the queue's retries of failed runs and the control-plane
// watch's restarts (n from 0: 1 s, 2 s …) all back off by it.
func backoff(n int, limit time.Duration) time.Duration {
	return min(time.Second<<min(max(n, 0), 10), limit)
}
