package broker

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/storage"
)

// Label keys of OSB instance metadata, as upstream KEB names them: the
// cockpit shows them to the instance's owner.
const (
	LabelName          = "Name"
	LabelKubeconfigURL = "KubeconfigURL"
	LabelAPIServerURL  = "APIServerURL"
	// The expiry details and the documentation of trial and free instances.
	LabelTrialExpiry = "Trial account expiration details"
	LabelTrialDocs   = "Trial documentation"
	LabelFreeExpiry  = "Free plan expiration details"
	LabelFreeDocs    = "Available plans documentation"
)

// expiredText is what an expired trial's or free instance's expiry label
// says instead of a date.
const expiredText = "Your cluster has expired. It is not operational, and the links to its kubeconfig and API server " +
	"are no longer valid. To continue using Kyma, create a new cluster."

// labelTimeout bounds reading the API server's address for a label.
const labelTimeout = 2 * time.Second

// ServerURLs reads a runtime's API server address from its kubeconfig
// Secret (*userkubeconfig.Service).
type ServerURLs interface {
	ServerURL(ctx context.Context, runtimeID string) (string, error)
}

// LabelOptions say what instance labels link to.
type LabelOptions struct {
	// BrokerURL is keb's public base URL; empty: https://<request host>.
	BrokerURL string
	// Servers reads the API server address; nil leaves APIServerURL out.
	Servers ServerURLs
	// Lifetimes are the expiring plans' lifetimes by plan name.
	Lifetimes              map[string]time.Duration
	TrialDocs, FreeDocsURL string
}

// labels are an instance's OSB metadata labels: its name, and once its
// runtime exists the kubeconfig's URL and the API server's; trial and free
// instances add when they expire, and once expired link to documentation
// instead of the runtime. A runtime whose kubeconfig cannot be read now
// gets no APIServerURL (logged); the answer does not fail for a label.
func (b *Broker) labels(ctx context.Context, inst storage.Instance) map[string]string {
	l := map[string]string{}
	if name := inst.DisplayName(); name != "" {
		l[LabelName] = name
	}
	expiryKey, docsKey, docsURL := LabelTrialExpiry, LabelTrialDocs, b.opts.Labels.TrialDocs
	if inst.PlanName == catalog.FreePlanName {
		expiryKey, docsKey, docsURL = LabelFreeExpiry, LabelFreeDocs, b.opts.Labels.FreeDocsURL
	}
	lifetime, expires := b.opts.Labels.Lifetimes[inst.PlanName]
	if inst.ExpiredAt != nil {
		l[expiryKey] = expiredText
		l[docsKey] = docsURL
		return l
	}
	if expires {
		l[expiryKey] = expiresIn(inst.CreatedAt.Add(lifetime), b.now())
	}
	if inst.RuntimeID == "" || inst.State != storage.RuntimeSucceeded {
		return l
	}
	l[LabelKubeconfigURL] = b.brokerURL(ctx) + "/kubeconfig/" + inst.InstanceID
	if b.opts.Labels.Servers != nil {
		// A label is not worth a slow answer: with the control plane
		// down, GET instance answers without it after labelTimeout.
		lctx, cancel := context.WithTimeout(ctx, labelTimeout)
		defer cancel()
		server, err := b.opts.Labels.Servers.ServerURL(lctx, inst.RuntimeID)
		if err != nil {
			b.log.WithError(err).WithField("instance_id", inst.InstanceID).Warn("instance labels: no API server URL")
		} else {
			l[LabelAPIServerURL] = server
		}
	}
	return l
}

// expiresIn says, in the owner's words, when an instance expiring at end
// does, in days rounded to the nearest: today (under 12 hours left),
// tomorrow (under 36), or in N days (a new trial: in 14 days).
func expiresIn(end, now time.Time) string {
	// Past its end and not expired yet (the expiry job runs periodically):
	// today still.
	days := int(math.Round(end.Sub(now).Hours() / 24))
	switch {
	case days <= 0:
		return "Your cluster expires today."
	case days == 1:
		return "Your cluster expires tomorrow."
	default:
		return fmt.Sprintf("Your cluster expires in %d days.", days)
	}
}

type requestHostKey struct{}

// ContextWithRequestHost records the Host an OSB request was sent to, the
// broker's address as the platform knows it.
func ContextWithRequestHost(ctx context.Context, host string) context.Context {
	return context.WithValue(ctx, requestHostKey{}, host)
}

func (b *Broker) brokerURL(ctx context.Context) string {
	if u := b.opts.Labels.BrokerURL; u != "" {
		return strings.TrimRight(u, "/")
	}
	host, _ := ctx.Value(requestHostKey{}).(string)
	return "https://" + host
}
