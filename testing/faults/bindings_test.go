package faults

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/binding"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
)

func bindingPath(instanceID, bindingID string) string {
	return "/oauth/v2/service_instances/" + instanceID + "/service_bindings/" + bindingID
}

// Bindings are paced, so that they go on across the fault: at most one
// bind cycle (PUT, GET, maybe DELETE) starts every bindEvery, and each
// instance is bound bindsPerInstance times (half of them unbound again,
// well below the instance's limit of live bindings).
const (
	bindEvery        = 250 * time.Millisecond
	bindsPerInstance = 6
)

// nextToBind takes the next instance to bind, when a bind cycle is due.
func (w *workload) nextToBind() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.toBind) == 0 || time.Now().Before(w.nextBindAt) {
		return "", false
	}
	w.nextBindAt = time.Now().Add(bindEvery)
	id := w.toBind[0]
	w.toBind = w.toBind[1:]
	return id, true
}

// bindingsAfter counts the bindings answered 201 or 200 after t.
func (w *workload) bindingsAfter(t time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, b := range w.bindings {
		if b.at.After(t) {
			n++
		}
	}
	return n
}

// resend sends a request until it is answered with one of want, as a
// platform re-sends after a 503, for at most 2 minutes; it returns the
// answer and the number of tries.
func (w *workload) resend(what string, send func(r *replica) (answer, error), want ...int) (answer, int, bool) {
	for tries, giveUp := 1, time.Now().Add(2*time.Minute); ; tries++ {
		r := w.target()
		label := what
		if tries > 1 {
			label = "re-sent " + what
		}
		done := w.track(label + " to " + r.name)
		a, err := send(r)
		done()
		if w.expected(label, r, a, err, want...) {
			return a, tries, true
		}
		if time.Now().After(giveUp) {
			w.mu.Lock()
			w.failures = append(w.failures, fmt.Sprintf("%s: not answered %v within 2 minutes", what, want))
			w.mu.Unlock()
			return answer{}, tries, false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// bind binds a succeeded instance (a synchronous bind: 201, or 200 for a
// re-sent PUT that finds it made), reads the binding back, and unbinds
// every second binding again.
func (w *workload) bind(instanceID string) {
	w.mu.Lock()
	w.bindCycles[instanceID]++
	n := w.bindCycles[instanceID]
	if n < bindsPerInstance {
		w.toBind = append(w.toBind, instanceID)
	}
	w.mu.Unlock()
	id := fmt.Sprintf("bind-%s-%d", instanceID, n)
	path := bindingPath(instanceID, id)
	body := fmt.Sprintf(`{"service_id": %q, "plan_id": %q}`, serviceID, azurePlanID)
	a, _, ok := w.resend("bind "+id, func(r *replica) (answer, error) { return w.s.call(r, http.MethodPut, path, body) },
		http.StatusCreated, http.StatusOK)
	if !ok {
		return
	}
	b := &boundBinding{id: id, instanceID: instanceID, kubeconfig: kubeconfigIn(a), at: time.Now()}
	w.mu.Lock()
	w.bindings[id] = b
	unbind := len(w.bindings)%2 == 0
	w.mu.Unlock()
	if b.kubeconfig == "" {
		w.fail("bind %s answered %d without a kubeconfig: %v", id, a.status, a.body)
	}
	if a, _, ok := w.resend("GET of binding "+id, func(r *replica) (answer, error) { return w.s.call(r, http.MethodGet, path, "") },
		http.StatusOK); ok && kubeconfigIn(a) != b.kubeconfig {
		w.fail("GET of binding %s: another kubeconfig than its PUT's", id)
	}
	if !unbind {
		return
	}
	a, tries, ok := w.resend("unbind "+id, func(r *replica) (answer, error) {
		return w.s.call(r, http.MethodDelete, path+"?service_id="+serviceID+"&plan_id="+azurePlanID, "")
	}, http.StatusOK, http.StatusGone)
	if !ok {
		return
	}
	if a.status == http.StatusGone && tries == 1 {
		w.fail("unbind %s: 410 to the first DELETE of a binding that was answered 201", id)
	}
	w.mu.Lock()
	b.unbound = true
	w.mu.Unlock()
}

func (w *workload) fail(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failures = append(w.failures, fmt.Sprintf(format, args...))
}

func kubeconfigIn(a answer) string {
	creds, _ := a.body["credentials"].(map[string]any)
	kc, _ := creds["kubeconfig"].(string)
	return kc
}

// expectBindings checks every binding the load made, once the load
// stopped: a binding answered 201 or 200 and not unbound is stored once,
// succeeded, GET answers it with the kubeconfig its PUT handed out, and the
// runtime holds exactly one ServiceAccount and one ClusterRoleBinding for
// it, the ones its row names; an unbound binding has no row and nothing in
// the runtime. No ServiceAccount of a binding outlives it (the prune job
// removes those of binds abandoned in the gap); those answered before the
// fault are counted.
func (s *stack) expectBindings(w *workload, fault time.Time) {
	s.t.Helper()
	ctx := context.Background()
	w.mu.Lock()
	made := map[string]*boundBinding{}
	for id, b := range w.bindings {
		made[id] = b
	}
	w.mu.Unlock()
	if len(made) == 0 {
		s.t.Fatal("the load made no binding")
	}
	type row struct{ instanceID, state, serviceAccount string }
	stored := map[string]row{}
	rows, err := s.db.Query(ctx, `SELECT binding_id, instance_id, state, service_account FROM bindings`)
	if err != nil {
		s.t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var r row
		if err := rows.Scan(&id, &r.instanceID, &r.state, &r.serviceAccount); err != nil {
			s.t.Fatal(err)
		}
		stored[id] = r
	}
	if err := rows.Err(); err != nil {
		s.t.Fatal(err)
	}
	rc := s.runtimeClient()
	objects := func() (sas, crbs map[string][]string) {
		var saList corev1.ServiceAccountList
		if err := rc.List(ctx, &saList, client.InNamespace(binding.Namespace), client.HasLabels{binding.LabelBindingID}); err != nil {
			s.t.Fatal(err)
		}
		var crbList rbacv1.ClusterRoleBindingList
		if err := rc.List(ctx, &crbList, client.HasLabels{binding.LabelBindingID}); err != nil {
			s.t.Fatal(err)
		}
		sas, crbs = map[string][]string{}, map[string][]string{}
		for _, sa := range saList.Items {
			sas[sa.Labels[binding.LabelBindingID]] = append(sas[sa.Labels[binding.LabelBindingID]], sa.Name)
		}
		for _, crb := range crbList.Items {
			crbs[crb.Labels[binding.LabelBindingID]] = append(crbs[crb.Labels[binding.LabelBindingID]], crb.Name)
		}
		return sas, crbs
	}
	// Abandoned binds' objects go with the prune job (every 2 s here),
	// once their deadline passed.
	var sas, crbs map[string][]string
	waitFor(s.t, 2*time.Minute, "no binding objects in the runtime but the live bindings'", func() bool {
		sas, crbs = objects()
		for id := range sas {
			if b := made[id]; b == nil || b.unbound {
				return false
			}
		}
		for id := range crbs {
			if b := made[id]; b == nil || b.unbound {
				return false
			}
		}
		return true
	})
	before, live := 0, 0
	for id, b := range made {
		r, ok := stored[id]
		if b.unbound {
			if ok {
				s.t.Errorf("binding %s was unbound (200) but its row is there: %+v", id, r)
			}
			continue
		}
		live++
		if b.at.Before(fault) {
			before++
		}
		switch {
		case !ok:
			s.t.Errorf("binding %s, answered %s, has no row", id, b.at.Format(time.TimeOnly))
			continue
		case r.instanceID != b.instanceID || r.state != "succeeded":
			s.t.Errorf("binding %s: row of instance %s, %s; want %s, succeeded", id, r.instanceID, r.state, b.instanceID)
		}
		if len(sas[id]) != 1 || sas[id][0] != r.serviceAccount || len(crbs[id]) != 1 || crbs[id][0] != r.serviceAccount {
			s.t.Errorf("binding %s: ServiceAccounts %v and ClusterRoleBindings %v in the runtime, want exactly %s", id, sas[id], crbs[id], r.serviceAccount)
		}
		a, err := s.call(s.running()[0], http.MethodGet, bindingPath(b.instanceID, id), "")
		if err != nil || a.status != http.StatusOK || kubeconfigIn(a) != b.kubeconfig {
			s.t.Errorf("GET of binding %s after the fault: %d %v (the kubeconfig its PUT handed out: %v)", id, a.status, err,
				kubeconfigIn(a) == b.kubeconfig)
		}
	}
	for id, r := range stored {
		if made[id] == nil {
			s.t.Errorf("binding row %s (%s) the load was never answered 201/200 for", id, r.state)
		}
	}
	s.t.Logf("bindings: %d made, %d of them answered before the fault; %d live, each stored once with one ServiceAccount; %d unbound, gone",
		len(made), before, live, len(made)-live)
}

// runtimeClient reaches the runtimes' apiserver: the simulated
// infrastructure manager gives every runtime the same one (shared mode), so
// any runtime's kubeconfig Secret will do.
func (s *stack) runtimeClient() client.Client {
	s.t.Helper()
	ctx := context.Background()
	var runtimeID string
	if err := s.db.QueryRow(ctx, `SELECT runtime_id FROM instances WHERE runtime_id <> '' LIMIT 1`).Scan(&runtimeID); err != nil {
		s.t.Fatalf("a runtime to reach the runtimes' apiserver through: %v", err)
	}
	var secret corev1.Secret
	if err := s.kc.Get(ctx, client.ObjectKey{Namespace: kcpNS, Name: infrastructuremanager.KubeconfigSecretName(runtimeID)}, &secret); err != nil {
		s.t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[infrastructuremanager.KubeconfigKey])
	if err != nil {
		s.t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s.kc.Scheme()})
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}
