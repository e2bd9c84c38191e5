package e2e

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/infrasim"
	"github.com/kyma-keb/keb/testing/k8stest"
)

// repoRoot is the repository's top directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := k8stest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// helmBin is the helm the Makefile installs into bin/tools (`make helm`).
func helmBin(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	h := filepath.Join(repoRoot(t), "bin", "tools", "helm")
	if _, err := os.Stat(h); err != nil {
		t.Fatalf("helm is missing at %s: run `make helm` (or `make test`, which installs it)", h)
	}
	return h
}

// promtoolBin is Prometheus's rule checker: $PROMTOOL, else bin/tools/promtool (make promtool).
func promtoolBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p
	}
	p := filepath.Join(repoRoot(t), "bin", "tools", "promtool")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("promtool is missing at %s: run `make promtool` (or `make test`, which installs it)", p)
	}
	return p
}

// TestChartAlertsFire: the alerts the chart ships are valid Prometheus rules, and each fires on
// series as keb's replicas export them and stays quiet on a near miss (files/alerts_test.yaml,
// Prometheus's own rule evaluation through `promtool test rules`).
func TestChartAlertsFire(t *testing.T) {
	files := filepath.Join(chartDir(t), "files")
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtoolBin(t), args...)
		cmd.Dir = files
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Every alert has a test that fires it.
	raw, err := os.ReadFile(filepath.Join(files, "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range chartAlerts(t) {
		name, _ := a["alert"].(string)
		if !regexp.MustCompile(`(?s)alertname: ` + name + `\n\s+exp_alerts:\n\s+- exp_labels`).Match(raw) {
			t.Errorf("alert %s has no test in files/alerts_test.yaml that fires it", name)
		}
	}
}

func chartDir(t *testing.T) string { return filepath.Join(repoRoot(t), "deploy", "helm", "keb") }

// renderChart runs helm template for release "keb" in kcp-system and returns
// the documents.
func renderChart(t *testing.T, set ...string) ([]*unstructured.Unstructured, []byte) {
	t.Helper()
	// The chart's least valid values (ci/minimal-values.yaml, an issuer), as an install would have them.
	args := []string{"template", "keb", chartDir(t), "--namespace", kcpNS, "-f", filepath.Join(chartDir(t), "ci", "minimal-values.yaml")}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := exec.Command(helmBin(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range bytes.Split(out, []byte("\n---")) {
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, doc)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
	return objs, out
}

func find[T any](t *testing.T, objs []*unstructured.Unstructured, kind, name string) *T {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			v := new(T)
			raw, _ := yaml.Marshal(o.Object)
			if err := yaml.Unmarshal(raw, v); err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

// serveEnvs are the variables `keb serve` reads.
func serveEnvs() []string {
	var c config.Config
	b := config.NewBinder(flag.NewFlagSet("serve", flag.ContinueOnError))
	c.BindServe(b)
	return b.Envs()
}

// everything turns on every optional part of the chart.
var everything = []string{"serviceMonitor.enabled=true", "prometheusRule.enabled=true", "networkPolicy.enabled=true", "grafanaDashboard.enabled=true",
	"networkPolicy.ingressNamespaces={cis}", "kcp.kubeconfigSecret=kcp-kubeconfig",
	"gardener.kubeconfigSecret=gardener-kubeconfig", "auth.publicKeysSecret=issuer-keys", "plansConfigMap=keb-plans", "oidcDefaultConfigMap=keb-oidc", "blocklistConfigMap=keb-blocklist",
	"cis.secretName=cis-credentials", "hap.rule={azure,aws,gcp,azure_lite,trial}"}

// secretOnly are settings the chart sets from Secrets in another form: the
// CIS credentials as files (APP_CIS_CLIENT_*_FILE); their plain forms, the
// AVS password, the EDP secret, the Director's client secret, the IAS
// user's secret and the LMS token can come from envFromSecrets.
var secretOnly = []string{"APP_CIS_CLIENT_ID", "APP_CIS_CLIENT_SECRET", "APP_AVS_OAUTH_PASSWORD", "APP_EDP_SECRET",
	"APP_DIRECTOR_OAUTH_CLIENT_SECRET", "APP_IAS_USER_SECRET", "APP_LMS_TOKEN"}

func TestHelmChart(t *testing.T) {
	out, err := exec.Command(helmBin(t), "lint", "--strict", chartDir(t)).CombinedOutput()
	if err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}

	objs, _ := renderChart(t)
	dep := find[appsv1.Deployment](t, objs, "Deployment", "keb")
	if *dep.Spec.Replicas != 2 || dep.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Errorf("deployment: %d replicas, strategy %+v", *dep.Spec.Replicas, dep.Spec.Strategy)
	}
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes: readiness %s, liveness %s", c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
	}
	// Explicit probe timings (docs/deploying.md, "Probes"): kubelet's 1 s
	// default timeout leaves a busy node no room, and a replica must stay in
	// the Service for longer than the readiness checks take to see trouble
	// (their interval plus their 3 s bound), so one blip does not flap it.
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p.TimeoutSeconds < 2 || p.PeriodSeconds == 0 || p.FailureThreshold < 3 {
			t.Errorf("%s probe: timeout %ds, period %ds, failure threshold %d", name, p.TimeoutSeconds, p.PeriodSeconds, p.FailureThreshold)
		}
	}
	interval, err := time.ParseDuration(find[corev1.ConfigMap](t, objs, "ConfigMap", "keb").Data["APP_READINESS_INTERVAL"])
	if err != nil {
		t.Fatalf("APP_READINESS_INTERVAL: %v", err)
	}
	if out := time.Duration(c.ReadinessProbe.PeriodSeconds*c.ReadinessProbe.FailureThreshold) * time.Second; interval+3*time.Second >= out {
		t.Errorf("a replica leaves the Service after %s of failed probes, within one readiness check (%s + 3 s)", out, interval)
	}
	for _, ctr := range append(pod.InitContainers, pod.Containers...) {
		sc := ctr.SecurityContext
		if sc == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || *sc.Privileged || ctr.Resources.Requests.Cpu().IsZero() {
			t.Errorf("container %s: security context %+v, resources %+v", ctr.Name, sc, ctr.Resources)
		}
	}
	if psc := pod.SecurityContext; !*psc.RunAsNonRoot || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", psc)
	}
	if len(pod.InitContainers) != 1 || strings.Join(pod.InitContainers[0].Args, " ") != "migrate up" {
		t.Errorf("no `keb migrate up` init container: %+v", pod.InitContainers)
	}
	pdb := find[map[string]any](t, objs, "PodDisruptionBudget", "keb")
	if (*pdb)["spec"].(map[string]any)["minAvailable"] != float64(1) {
		t.Errorf("PDB %v", *pdb)
	}
	find[corev1.Service](t, objs, "Service", "keb")
	find[corev1.ServiceAccount](t, objs, "ServiceAccount", "keb")
	// Two replicas on one node are one node's loss away from no broker.
	spreadByNode := false
	for _, c := range pod.TopologySpreadConstraints {
		if c.TopologyKey == "kubernetes.io/hostname" && c.LabelSelector != nil &&
			reflect.DeepEqual(c.LabelSelector.MatchLabels, dep.Spec.Selector.MatchLabels) {
			spreadByNode = true
		}
	}
	if !spreadByNode {
		t.Errorf("the replicas are not spread over nodes: %+v", pod.TopologySpreadConstraints)
	}

	t.Run("with everything on: alerts and the network policy", func(t *testing.T) {
		objs, _ := renderChart(t, everything...)
		rule := find[map[string]any](t, objs, "PrometheusRule", "keb")
		groups, _ := (*rule)["spec"].(map[string]any)["groups"].([]any)
		if alerts := chartAlerts(t); len(groups) != 1 || len(groups[0].(map[string]any)["rules"].([]any)) != len(alerts) {
			t.Errorf("the PrometheusRule holds %v, want the %d alerts of files/alerts.yaml", groups, len(alerts))
		}
		dashboard := find[corev1.ConfigMap](t, objs, "ConfigMap", "keb-dashboard")
		if dashboard.Labels["grafana_dashboard"] != "1" || len(chartDashboard(t, []byte(dashboard.Data["keb.json"]))) < 10 {
			t.Errorf("the dashboard ConfigMap: labels %v, %d bytes of JSON", dashboard.Labels, len(dashboard.Data["keb.json"]))
		}
		np := find[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", "keb")
		var from []string
		for _, r := range np.Spec.Ingress {
			for _, p := range r.From {
				if p.NamespaceSelector != nil {
					from = append(from, p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"])
				}
			}
		}
		if !reflect.DeepEqual(from, []string{"cis", "monitoring"}) || !reflect.DeepEqual(np.Spec.PodSelector.MatchLabels, dep.Spec.Selector.MatchLabels) {
			t.Errorf("the NetworkPolicy admits %v to %v, want cis and monitoring to keb's pods", from, np.Spec.PodSelector.MatchLabels)
		}
	})

	t.Run("every env var is one keb knows, and every setting is there", func(t *testing.T) {
		objs, _ := renderChart(t, everything...)
		known := serveEnvs()
		set := map[string]bool{}
		for k := range find[corev1.ConfigMap](t, objs, "ConfigMap", "keb").Data {
			set[k] = true
		}
		dep := find[appsv1.Deployment](t, objs, "Deployment", "keb")
		for _, ctr := range append(dep.Spec.Template.Spec.InitContainers, dep.Spec.Template.Spec.Containers...) {
			for _, e := range ctr.Env {
				set[e.Name] = true
				if e.Value != "" && strings.Contains(strings.ToLower(e.Name), "secret") && !strings.HasSuffix(e.Name, "_FILE") {
					t.Errorf("%s is set inline; secrets come from a Secret by name", e.Name)
				}
			}
		}
		for name := range set {
			if !slices.Contains(known, name) {
				t.Errorf("the chart sets %s, which keb serve does not read", name)
			}
		}
		for _, name := range known {
			if !set[name] && !slices.Contains(secretOnly, name) {
				t.Errorf("keb serve reads %s, which the chart cannot set", name)
			}
		}
	})

	t.Run("the chart's defaults are keb's", func(t *testing.T) {
		var want config.Config
		b := config.NewBinder(flag.NewFlagSet("serve", flag.ContinueOnError))
		want.BindServe(b)
		for k, v := range find[corev1.ConfigMap](t, objs, "ConfigMap", "keb").Data {
			t.Setenv(k, v)
		}
		var got config.Config
		b = config.NewBinder(flag.NewFlagSet("serve", flag.ContinueOnError))
		got.BindServe(b)
		if err := b.Err(); err != nil {
			t.Fatalf("the chart's config does not parse: %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("the chart's defaults differ from keb's:\nchart %+v\nkeb   %+v", got, want)
		}
	})

	t.Run("RBAC grants what internal/app/access.go lists", func(t *testing.T) {
		poolNS := "garden-" + config.Defaults.Engine.GardenerProject
		granted := map[string][]string{}
		for _, o := range objs {
			if o.GetKind() != "Role" {
				continue
			}
			role := find[rbacv1.Role](t, []*unstructured.Unstructured{o}, "Role", "")
			scope := app.ScopeControl
			if o.GetNamespace() == poolNS {
				scope = app.ScopePool
			} else if o.GetNamespace() != kcpNS {
				t.Errorf("role %s in unexpected namespace %s", o.GetName(), o.GetNamespace())
			}
			for _, r := range role.Rules {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						key := scope + "/" + g + "/" + res
						granted[key] = append(granted[key], r.Verbs...)
					}
				}
			}
		}
		listed := map[string][]string{}
		for _, a := range app.KubernetesAccess {
			key := a.Scope + "/" + a.Group + "/" + a.Resource
			listed[key] = append(listed[key], a.Verbs...)
		}
		for _, m := range []map[string][]string{granted, listed} {
			for k := range m {
				sort.Strings(m[k])
			}
		}
		if !reflect.DeepEqual(granted, listed) {
			t.Errorf("chart RBAC differs from internal/app/access.go:\nchart  %v\nlisted %v", granted, listed)
		}
	})

	t.Run("the API server accepts every manifest (server-side dry run)", func(t *testing.T) {
		ctx := t.Context()
		kc, err := client.New(kcp.Config, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range []string{kcpNS, poolNS} {
			_ = kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		if err := kcp.WriteKubeconfig(kubeconfig); err != nil {
			t.Fatal(err)
		}
		bin, err := k8stest.BinDir()
		if err != nil {
			t.Fatal(err)
		}
		kubectl := func(stdin []byte, args ...string) {
			t.Helper()
			cmd := exec.Command(filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
			cmd.Stdin = bytes.NewReader(stdin)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("kubectl %v: %v\n%s", args, err, out)
			}
		}
		// The ServiceMonitor kind comes with the Prometheus operator; a
		// stand-in CRD lets the API server check the rest of the object.
		for _, name := range []string{"servicemonitor", "prometheusrule"} {
			crd, err := os.ReadFile(filepath.Join("testdata", name+"-crd.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			kubectl(crd, "apply", "-f", "-")
			waitForKind(t, kubectl, name+"s.monitoring.coreos.com")
		}
		for _, set := range [][]string{nil, everything} {
			_, rendered := renderChart(t, set...)
			kubectl(rendered, "apply", "--dry-run=server", "-f", "-")
		}
	})
}

// TestChartRefusesInstallWithoutIssuer: without a token issuer keb serve
// cannot start; the install fails at once with what to set instead of
// leaving pods that crash.
func TestChartRefusesInstallWithoutIssuer(t *testing.T) {
	for _, c := range []struct {
		set  []string
		want string
	}{
		{nil, "config.APP_AUTH_JWKS_URLS"},
		{[]string{"config.APP_AUTH_JWKS_URLS=https://idp.example/jwks", "database.secretKeyKey="}, "database.secretKeyKey"},
	} {
		args := []string{"template", "keb", chartDir(t)}
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		out, err := exec.Command(helmBin(t), args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("helm template --set %v: %v, want a failure naming %s:\n%.400s", c.set, err, c.want, out)
		}
	}
	for _, set := range []string{"auth.publicKeysSecret=keys", "config.APP_AUTH_JWKS_URLS=https://idp.example/jwks", "auth.issuerFromEnv=true"} {
		if out, err := exec.Command(helmBin(t), "template", "keb", chartDir(t), "--set", set).CombinedOutput(); err != nil {
			t.Errorf("helm template --set %s: %v\n%.400s", set, err, out)
		}
	}
}

// chartAlerts are the alerts of the chart's files/alerts.yaml.
func chartAlerts(t *testing.T) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "files", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Rules []map[string]any `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var alerts []map[string]any
	for _, g := range doc.Groups {
		alerts = append(alerts, g.Rules...)
	}
	return alerts
}

// chartDashboard is the chart's files/dashboard.json: each panel's title and queries.
func chartDashboard(t *testing.T, raw []byte) map[string][]string {
	t.Helper()
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the dashboard does not parse: %v", err)
	}
	panels := map[string][]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			panels[p.Title] = append(panels[p.Title], tg.Expr)
		}
	}
	return panels
}

// TestChartAlertsReadDocumentedMetrics: an alert or a dashboard panel on a
// series keb never exports never fires and stays empty. Every metric an
// alert or a panel of the chart reads is one docs/metrics.md lists
// (histograms by their _bucket/_count/_sum series).
func TestChartAlertsReadDocumentedMetrics(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`((?:kcp_keb_v2|keb)_[a-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	metric := regexp.MustCompile(`\b(?:kcp_keb_v2|keb)_[a-z0-9_]+\b`)
	check := func(what, expr string) {
		names := metric.FindAllString(expr, -1)
		if len(names) == 0 {
			t.Errorf("%s reads no keb metric: %q", what, expr)
		}
		for _, n := range names {
			base := n
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if b, ok := strings.CutSuffix(n, suffix); ok && documented[b] {
					base = b
				}
			}
			if !documented[base] {
				t.Errorf("%s reads %s, which docs/metrics.md does not list", what, n)
			}
		}
	}
	alerts := chartAlerts(t)
	if len(alerts) < 10 {
		t.Fatalf("files/alerts.yaml has %d alerts", len(alerts))
	}
	for _, a := range alerts {
		name, _ := a["alert"].(string)
		expr, _ := a["expr"].(string)
		check("alert "+name, expr)
	}
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	panels := chartDashboard(t, raw)
	// What an operator opens it for: operations, failures by component,
	// durations, the queue, the pool, the database and the control plane.
	for _, want := range []string{"kcp_keb_v2_operations_provisioning_failed_total", "kcp_keb_v2_operation_result",
		"kcp_keb_v2_provisioning_duration_minutes_bucket", "keb_queue_oldest_available_job_age_seconds",
		"keb_account_pool_secrets", "keb_database_statements_total", "keb_apiserver_requests_total"} {
		found := false
		for title, exprs := range panels {
			for _, e := range exprs {
				check("panel "+title, e)
				found = found || strings.Contains(e, want)
			}
		}
		if !found {
			t.Errorf("no dashboard panel reads %s", want)
		}
	}
}

// freshAccount adds an azure pool account of its own for a test: the seeded
// ones may have been claimed and left dirty by other tests on this control
// plane.
func freshAccount(t *testing.T, c client.Client, name string) {
	t.Helper()
	if err := createAccount(t.Context(), c, name, hyperscaler.TypeAzure); err != nil {
		t.Fatal(err)
	}
}

// waitForKind waits until the API server serves a CRD's kind.
func waitForKind(t *testing.T, kubectl func([]byte, ...string), crd string) {
	t.Helper()
	kubectl(nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/"+crd)
}

// TestChartRBACIsEnough runs a provisioning and a deprovisioning with keb
// acting as the chart's service account, with only the chart's RBAC: a call
// the chart does not grant fails the operation.
func TestChartRBACIsEnough(t *testing.T) {
	ctx := t.Context()
	admin, err := client.New(kcp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{kcpNS, poolNS} {
		_ = admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	objs, _ := renderChart(t)
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding":
			if o.GetNamespace() == "" {
				o.SetNamespace(kcpNS)
			}
			if err := admin.Create(ctx, o); client.IgnoreAlreadyExists(err) != nil {
				t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	// A kubeconfig that impersonates the chart's service account.
	adminKubeconfig := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := kcp.WriteKubeconfig(adminKubeconfig); err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(adminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range kc.AuthInfos {
		u.Impersonate = "system:serviceaccount:" + kcpNS + ":keb"
	}
	saKubeconfig := filepath.Join(t.TempDir(), "sa.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, saKubeconfig); err != nil {
		t.Fatal(err)
	}

	s := newStack(t, infrasim.ModeShared, 0, func(c *config.Config) { c.Engine.KCPKubeconfig = saKubeconfig })
	freshAccount(t, s.kcp, "azure-rbac")
	// Every call either makes fails the operation if the chart does not grant it.
	s.provisionAzure("e2e-rbac-1", "ga-rbac")
	s.deprovisionAzure("e2e-rbac-1")
}
