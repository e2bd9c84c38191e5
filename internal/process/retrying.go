package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// retryingPrefix starts the description of an operation whose step keeps
// failing; it is taken off again before the next one is written.
const retryingPrefix = "retrying: "

// describeRetry tells the platform user, in last_operation, that the step
// is retrying and since when, instead of leaving the last saved description
// standing for minutes while the errors only reach the log. The error's own
// text stays in the log: it may name hosts and internals.
func describeRetry(step Step, o *Operation, err error) {
	doing := o.Description
	if strings.HasPrefix(doing, retryingPrefix) {
		if _, rest, ok := strings.Cut(doing, "): "); ok {
			doing = rest
		}
	}
	since := o.Record.FailingSince.UTC().Format(time.RFC3339)
	if unreachable(err) {
		where := "the control plane"
		if r, ok := step.(RemoteStep); ok {
			where = r.Remote()
		}
		o.Describe("%s%s is unreachable (since %s): %s", retryingPrefix, where, since, doing)
		return
	}
	o.Describe("%safter %s (since %s): %s", retryingPrefix, plural(o.Record.Failures, "error"), since, doing)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// unreachable reports whether err means the other side did not answer: no
// connection, a dropped one, a timeout, or an API server saying it cannot
// serve.
func unreachable(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}
