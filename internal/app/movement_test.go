package app_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/storage"
)

// TestSubaccountMovement: with APP_SUBACCOUNT_MOVEMENT_ENABLED a PATCH with
// another globalaccount_id moves the subaccount: the instance's global
// account is the new one (the original kept for the account pool), the move
// is in its history (/info/runtimes?actions=true), and an update relabels
// the runtime's CRs. The subaccount itself never changes.
func TestSubaccountMovement(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(c *config.Config) { c.SubaccountMovement = true }, io.Discard)
	b.running("mv-1")
	opID := b.accepted(b.do(http.MethodPatch, provisionPath("mv-1"),
		patchBody(`"globalaccount_id":"ga-2","subaccount_id":"sa-1"`)))
	inst := b.instance("mv-1")
	if inst.GlobalAccountID != "ga-2" || inst.SubscriptionGlobalAccountID != "ga-1" || inst.PoolTenant() != "ga-1" {
		t.Fatalf("global account %s, subscription %s; want ga-2, ga-1", inst.GlobalAccountID, inst.SubscriptionGlobalAccountID)
	}
	op := b.operation("mv-1", opID)
	if op.Type != storage.OperationTypeUpdate || op.Request == nil || !op.Request.GlobalAccountMoved || op.Request.Credentials {
		t.Fatalf("operation %s, request %+v; want an update relabelling the runtime", op.Type, op.Request)
	}
	r := b.expect(b.do(http.MethodGet, "/info/runtimes?state=all&actions=true&instance_id=mv-1", ""), http.StatusOK)
	rt := r.body["data"].([]any)[0].(map[string]any)
	if rt["globalAccountID"] != "ga-2" {
		t.Errorf("/info/runtimes global account %v, want ga-2", rt["globalAccountID"])
	}
	actions, _ := rt["actions"].([]any)
	if len(actions) != 1 {
		t.Fatalf("actions %v, want the movement", rt["actions"])
	}
	a := actions[0].(map[string]any)
	if a["type"] != "subaccount_movement" || a["oldValue"] != "ga-1" || a["newValue"] != "ga-2" {
		t.Errorf("action %v", a)
	}
	// The console's instance page shows the move in the instance's history.
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.PostForm(b.srv.URL+"/console/login", url.Values{"token": {b.mint(auth.ScopeCLDRead)}, "next": {"/console"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	res, err = c.Get(b.srv.URL + "/console/instances/mv-1")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(page), `data-action="subaccount_movement"`) || !strings.Contains(string(page), "moved from global account ga-1 to ga-2") {
		t.Errorf("console instance page (%d) does not show the move", res.StatusCode)
	}
	// Moved on again (after the update finished): the original stays the pool's.
	b.finish(opID, storage.OperationSucceeded)
	b.accepted(b.do(http.MethodPatch, provisionPath("mv-1"), patchBody(`"globalaccount_id":"ga-3"`)))
	if inst := b.instance("mv-1"); inst.GlobalAccountID != "ga-3" || inst.SubscriptionGlobalAccountID != "ga-1" {
		t.Errorf("after a second move: %s, subscription %s; want ga-3, ga-1", inst.GlobalAccountID, inst.SubscriptionGlobalAccountID)
	}
	// Off: the move is refused, as before.
	off := setup(t)
	off.running("mv-off")
	off.expectOSBError(off.do(http.MethodPatch, provisionPath("mv-off"), patchBody(`"globalaccount_id":"ga-2"`)),
		http.StatusUnprocessableEntity, "UpdateNotSupported")
}
