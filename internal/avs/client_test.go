package avs_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/avssim"
)

// calls records what the client observed, as the metrics do.
type calls struct {
	mu  sync.Mutex
	got []string
}

func (c *calls) Observe(integration, call string, status int, failed bool, _ time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := integration + " " + call + " " + http.StatusText(status)
	if failed {
		s += " failed"
	}
	c.got = append(c.got, s)
}

// standIn serves an AVS stand-in with parent 40 and returns a client of it.
func standIn(t *testing.T) (*avssim.Server, *avs.Client, avs.Config, *calls) {
	t.Helper()
	sim := avssim.New(avssim.Options{ClientID: "cid", Username: "user", Password: "pw", Parents: []int64{40, 41}})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	cfg := avs.Config{APIEndpoint: srv.URL + avssim.APIPath, OAuthTokenEndpoint: srv.URL + avssim.TokenPath,
		OAuthClientID: "cid", OAuthUsername: "user", OAuthPassword: "pw",
		InternalTesterAccessID: 40, ExternalTesterAccessID: 42, GroupID: 40, ParentID: 40,
		TagClasses: avs.TagClasses{InstanceID: 1, GlobalAccountID: 2, SubAccountID: 3, Landscape: 4, Provider: 5, Region: 6, ShootName: 7}}
	c := &calls{}
	return sim, avs.NewClient(cfg, srv.Client(), c), cfg, c
}

var runtime = avs.Runtime{InstanceID: "3f1c0000-0000-4000-8000-000000000001", InstanceName: "my-kyma", GlobalAccountID: "ga-1",
	SubAccountID: "sa-1", PlanName: "aws", PlatformRegion: "cf-eu10", Region: "eu-central-1", ShootName: "c-1a2b3c4",
	Domain: "c-1a2b3c4.kyma.example.com"}

// TestCreateRequestBody holds the creation bodies to the contract's shape:
// names, the description as JSON in a string, the threshold as a string, the
// seven tags in order, and the external evaluation's health URL.
func TestCreateRequestBody(t *testing.T) {
	t.Parallel()
	_, _, cfg, _ := standIn(t)
	internal, _ := json.Marshal(cfg.NewCreateRequest(avs.Internal, runtime))
	want := `{"definition_type":"BASIC","name":"K8S-AWS-Kyma-int-3f1c0000-0000-4000-8000-000000000001-my-kyma",` +
		`"description":"{\"instanceName\":\"my-kyma\",\"globalAccountID\":\"ga-1\",\"subAccountID\":\"sa-1\",\"instanceID\":\"3f1c0000-0000-4000-8000-000000000001\",\"shootName\":\"c-1a2b3c4\"}",` +
		`"service":"K8S-AWS-Kyma-int-3f1c0000-0000-4000-8000-000000000001-my-kyma","url":"","check_type":"","interval":60,` +
		`"tester_access_id":40,"timeout":30000,"read_only":false,"content_check":"error","content_check_type":"NOT_CONTAINS",` +
		`"threshold":"30000","group_id":40,"visibility":"PUBLIC","parent_id":40,"tags":[` +
		`{"content":"3f1c0000-0000-4000-8000-000000000001","tag_class_id":1,"tag_class_name":""},` +
		`{"content":"ga-1","tag_class_id":2,"tag_class_name":""},{"content":"sa-1","tag_class_id":3,"tag_class_name":""},` +
		`{"content":"cf-eu10","tag_class_id":4,"tag_class_name":""},{"content":"AWS","tag_class_id":5,"tag_class_name":""},` +
		`{"content":"c-1a2b3c4","tag_class_id":7,"tag_class_name":""},{"content":"eu-central-1","tag_class_id":6,"tag_class_name":""}]}`
	if string(internal) != want {
		t.Errorf("internal evaluation:\n got %s\nwant %s", internal, want)
	}
	ext := cfg.NewCreateRequest(avs.External, runtime)
	if ext.URL != "https://healthz.c-1a2b3c4.kyma.example.com/healthz/ready" || ext.CheckType != "HTTPSGET" ||
		ext.TesterAccessID != 42 || !strings.HasPrefix(ext.Name, "K8S-AWS-Kyma-ext-") {
		t.Errorf("external evaluation: %+v", ext)
	}
	long := runtime
	long.PlanName, long.InstanceName = "azure_lite", strings.Repeat("n", 100)
	if n := cfg.NewCreateRequest(avs.Internal, long).Name; len(n) != 80 || !strings.HasPrefix(n, "K8S-AZR-Kyma-int-") {
		t.Errorf("a long name: %q (%d), want 80 characters starting K8S-AZR", n, len(n))
	}
	trial := cfg
	trial.TrialInternalTesterAccessID, trial.TrialGroupID, trial.TrialParentID = 50, 51, 41
	tr := runtime
	tr.PlanName = "trial"
	if r := trial.NewCreateRequest(avs.Internal, tr); r.TesterAccessID != 50 || r.GroupID != 51 || r.ParentID != 41 {
		t.Errorf("trial internal evaluation uses %d/%d/%d, want the trial tester 50/51/41", r.TesterAccessID, r.GroupID, r.ParentID)
	}
}

// TestClientAgainstStandIn creates, reads, puts into maintenance, detaches
// and deletes an evaluation, each with a fresh token, and checks what is
// temporary and what is tolerated.
func TestClientAgainstStandIn(t *testing.T) {
	t.Parallel()
	sim, c, cfg, observed := standIn(t)
	ctx := t.Context()
	ev, err := c.CreateEvaluation(ctx, cfg.NewCreateRequest(avs.Internal, runtime))
	if err != nil || ev.ID == 0 || ev.Status != avs.StatusActive {
		t.Fatalf("CreateEvaluation = %+v, %v", ev, err)
	}
	if parent := sim.Evaluations()[40]; len(parent.Children) != 1 || parent.Children[0] != ev.ID {
		t.Errorf("parent 40's children %v, want [%d]", parent.Children, ev.ID)
	}
	if err := c.SetStatus(ctx, ev.ID, avs.StatusMaintenance); err != nil {
		t.Fatalf("SetStatus: %v", err)
	}
	if got, err := c.GetEvaluation(ctx, ev.ID); err != nil || got.Status != avs.StatusMaintenance {
		t.Errorf("GetEvaluation = %+v, %v; want MAINTENANCE", got, err)
	}
	if body := sim.Requests()[1].Body; body != `"MAINTENANCE"` {
		t.Errorf("lifecycle body %s, want a bare JSON string", body)
	}
	// A 503 is temporary, a 400 is not.
	sim.FailNext(1, http.StatusServiceUnavailable)
	if _, err := c.GetEvaluation(ctx, ev.ID); !avs.Temporary(err) {
		t.Errorf("503: %v, want a temporary error", err)
	}
	bad := cfg.NewCreateRequest(avs.Internal, runtime)
	bad.ParentID = 99
	if _, err := c.CreateEvaluation(ctx, bad); err == nil || avs.Temporary(err) {
		t.Errorf("an unknown parent: %v, want a permanent error", err)
	}
	// Detach and delete, twice: the second time the evaluation is not the
	// parent's child any more (400 "does not contain subevaluation") and is
	// gone (404), both success.
	for range 2 {
		if err := c.Detach(ctx, 40, ev.ID); err != nil {
			t.Fatalf("Detach: %v", err)
		}
		if err := c.DeleteEvaluation(ctx, ev.ID); err != nil {
			t.Fatalf("DeleteEvaluation: %v", err)
		}
	}
	if _, ok := sim.Evaluations()[ev.ID]; ok {
		t.Errorf("evaluation %d still exists", ev.ID)
	}
	if len(observed.got) != 9 || observed.got[0] != "avs create_evaluation OK" || observed.got[3] != "avs get_evaluation Service Unavailable failed" {
		t.Errorf("observed calls %q", observed.got)
	}
}

// TestClientAuth: a wrong password gets no token (a temporary error, as
// upstream), and a 401 from the API is retried once with a new token.
func TestClientAuth(t *testing.T) {
	t.Parallel()
	sim, _, cfg, _ := standIn(t)
	wrong := cfg
	wrong.OAuthPassword = "nope"
	srvClient := &http.Client{}
	if _, err := avs.NewClient(wrong, srvClient, nil).GetEvaluation(t.Context(), 40); err == nil || !avs.Temporary(err) {
		t.Errorf("wrong password: %v, want a temporary token error", err)
	}
	c := avs.NewClient(cfg, srvClient, nil)
	sim.FailNext(1, http.StatusUnauthorized)
	if _, err := c.GetEvaluation(t.Context(), 40); err != nil {
		t.Errorf("one 401: %v, want success on the retry", err)
	}
	sim.FailNext(2, http.StatusUnauthorized)
	if _, err := c.GetEvaluation(t.Context(), 40); err == nil || avs.Temporary(err) {
		t.Errorf("two 401s: %v, want a permanent error", err)
	}
}
