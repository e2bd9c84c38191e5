package infrastructuremanager

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Write is what keb remembers of a change it wrote to a Runtime CR, to tell
// when the infrastructure manager has applied it. The infrastructure manager
// writes no observedGeneration; its status says only state and conditions.
// The rule (docs/architecture.md, "Waiting for the infrastructure manager"):
// the change is applied when the Runtime is Ready and, since the write,
// either a wait saw it short of Ready, or its conditions changed (a
// transition, a new reason or message: the infrastructure manager wrote its
// status after keb's write), or Grace has passed (a change it applies
// without leaving Ready or touching a condition).
type Write struct {
	// At is when keb's patch returned, on keb's clock.
	At time.Time `json:"at"`
	// Generation is the metadata.generation the patch produced.
	Generation int64 `json:"generation"`
	// Conditions fingerprints status.conditions as the patch's answer
	// showed them.
	Conditions string `json:"conditions,omitempty"`
	// LeftReady is set once a wait saw the Runtime short of Ready after the
	// write.
	LeftReady bool `json:"leftReady,omitempty"`
}

// NewWrite records a patch that changed rt's spec, answered at at.
func NewWrite(rt *Runtime, at time.Time) *Write {
	return &Write{At: at, Generation: rt.Generation, Conditions: Fingerprint(rt.Status.Conditions)}
}

// Applied reports whether rt shows the change w recorded as applied, given
// grace for a change applied without a visible transition. When it does
// not, next is how long until grace ends while rt is Ready (zero
// otherwise): the wait looks again then at the latest. Applied records on w
// that rt was seen short of Ready, so the caller saves w afterwards.
func (w *Write) Applied(rt *Runtime, now time.Time, grace time.Duration) (applied bool, next time.Duration) {
	if rt.Status.State != StateReady {
		w.LeftReady = true
		return false, 0
	}
	if w.LeftReady || Fingerprint(rt.Status.Conditions) != w.Conditions {
		return true, 0
	}
	if left := w.At.Add(grace).Sub(now); left > 0 {
		return false, left
	}
	return true, 0
}

// Fingerprint identifies a list of conditions: type, status, reason,
// message and transition time of each, in any order. It is short enough to
// keep in an operation's data.
func Fingerprint(conds []metav1.Condition) string {
	if len(conds) == 0 {
		return ""
	}
	lines := make([]string, 0, len(conds))
	for _, c := range conds {
		lines = append(lines, strings.Join([]string{c.Type, string(c.Status), c.Reason, c.Message,
			c.LastTransitionTime.UTC().Format(time.RFC3339)}, "\x00"))
	}
	slices.Sort(lines)
	h := fnv.New64a()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// Newest is the condition that changed last (by lastTransitionTime; the
// later entry on a tie), nil for none: the one a waiting operation shows.
func Newest(conds []metav1.Condition) *metav1.Condition {
	var n *metav1.Condition
	for i := range conds {
		if n == nil || !conds[i].LastTransitionTime.Before(&n.LastTransitionTime) {
			n = &conds[i]
		}
	}
	return n
}

// Explain says what the Runtime's status shows, for a waiting operation's
// description: its state and the newest condition's reason and message.
func Explain(st RuntimeStatus) string {
	state := string(st.State)
	if state == "" {
		state = "requested"
	}
	c := Newest(st.Conditions)
	switch {
	case c == nil:
		return state
	case c.Message == "":
		return fmt.Sprintf("%s, %s", state, c.Reason)
	default:
		return fmt.Sprintf("%s, %s: %s", state, c.Reason, c.Message)
	}
}
