package broker

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/storage"
)

type serverURLs map[string]string

func (s serverURLs) ServerURL(ctx context.Context, runtimeID string) (string, error) {
	if runtimeID == "rt-hangs" { // a control plane that does not answer
		<-ctx.Done()
		return "", ctx.Err()
	}
	if u, ok := s[runtimeID]; ok {
		return u, nil
	}
	return "", errors.New("no kubeconfig Secret")
}

func TestLabels(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	expired := now.Add(-time.Hour)
	b := &Broker{now: func() time.Time { return now }, log: logrus.New(), opts: Options{Labels: LabelOptions{
		Servers:   serverURLs{"rt-1": "https://api.c1.example"},
		Lifetimes: map[string]time.Duration{catalog.TrialPlanName: 14 * 24 * time.Hour, catalog.FreePlanName: 30 * 24 * time.Hour},
		TrialDocs: "https://docs/trial", FreeDocsURL: "https://docs/free",
	}}}
	ctx := ContextWithRequestHost(context.Background(), "broker.example:8443")
	running := func(plan string, age time.Duration) storage.Instance {
		return storage.Instance{InstanceID: "i-1", RuntimeID: "rt-1", PlanName: plan, State: storage.RuntimeSucceeded,
			Parameters: json.RawMessage(`{"name":"c1"}`), CreatedAt: now.Add(-age)}
	}
	links := map[string]string{"Name": "c1", "KubeconfigURL": "https://broker.example:8443/kubeconfig/i-1",
		"APIServerURL": "https://api.c1.example"}
	with := func(extra map[string]string) map[string]string {
		out := maps.Clone(links)
		maps.Copy(out, extra)
		return out
	}
	tests := []struct {
		name string
		inst storage.Instance
		want map[string]string
	}{
		{"paid plan: no expiry", running(catalog.AzurePlanName, 400*24*time.Hour), links},
		{"trial, 14 days left", running(catalog.TrialPlanName, 0), with(map[string]string{LabelTrialExpiry: "Your cluster expires in 14 days."})},
		{"trial, 14 days less a minute left", running(catalog.TrialPlanName, time.Minute),
			with(map[string]string{LabelTrialExpiry: "Your cluster expires in 14 days."})},
		{"trial, 40 hours left", running(catalog.TrialPlanName, 14*24*time.Hour-40*time.Hour),
			with(map[string]string{LabelTrialExpiry: "Your cluster expires in 2 days."})},
		{"trial, 30 hours left", running(catalog.TrialPlanName, 14*24*time.Hour-30*time.Hour),
			with(map[string]string{LabelTrialExpiry: "Your cluster expires tomorrow."})},
		{"trial, an hour left", running(catalog.TrialPlanName, 14*24*time.Hour-time.Hour),
			with(map[string]string{LabelTrialExpiry: "Your cluster expires today."})},
		{"free, 20 days left", running(catalog.FreePlanName, 10*24*time.Hour), with(map[string]string{LabelFreeExpiry: "Your cluster expires in 20 days."})},
		{"expired trial: documentation, no links", func() storage.Instance {
			i := running(catalog.TrialPlanName, 15*24*time.Hour)
			i.ExpiredAt, i.State = &expired, storage.RuntimeSuspended
			return i
		}(), map[string]string{"Name": "c1", LabelTrialExpiry: expiredText, LabelTrialDocs: "https://docs/trial"}},
		{"expired free", func() storage.Instance {
			i := running(catalog.FreePlanName, 31*24*time.Hour)
			i.ExpiredAt = &expired
			return i
		}(), map[string]string{"Name": "c1", LabelFreeExpiry: expiredText, LabelFreeDocs: "https://docs/free"}},
		{"still provisioning: no links", func() storage.Instance {
			i := running(catalog.AzurePlanName, 0)
			i.State, i.RuntimeID = storage.RuntimeProvisioning, ""
			return i
		}(), map[string]string{"Name": "c1"}},
		{"kubeconfig Secret unreadable: no APIServerURL", func() storage.Instance {
			i := running(catalog.AzurePlanName, 0)
			i.RuntimeID = "rt-2"
			return i
		}(), map[string]string{"Name": "c1", "KubeconfigURL": "https://broker.example:8443/kubeconfig/i-1"}},
		{"control plane hangs: no APIServerURL after labelTimeout", func() storage.Instance {
			i := running(catalog.AzurePlanName, 0)
			i.RuntimeID = "rt-hangs"
			return i
		}(), map[string]string{"Name": "c1", "KubeconfigURL": "https://broker.example:8443/kubeconfig/i-1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			if got := b.labels(ctx, tc.inst); !maps.Equal(got, tc.want) {
				t.Errorf("labels\n got %v\nwant %v", got, tc.want)
			}
			if took := time.Since(began); took > labelTimeout+time.Second {
				t.Errorf("labels took %s", took)
			}
		})
	}
	b.opts.Labels.BrokerURL = "https://keb.example/"
	if got := b.labels(ctx, running(catalog.AzurePlanName, 0))[LabelKubeconfigURL]; got != "https://keb.example/kubeconfig/i-1" {
		t.Errorf("with APP_BROKER_URL: %s", got)
	}
}
