package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/orchestration"
)

// operatorClient calls keb's orchestration API.
type operatorClient struct {
	url, token, dir string
	output          listOutput
	client          *http.Client
	stdout, stderr  io.Writer
	// scopes of the dev token minted without --token (default: the
	// orchestration API's, broker-upgrade:read and :write).
	scopes []string
}

func (c *operatorClient) bind(b *config.Binder, fs *flag.FlagSet) {
	b.String(&c.url, "url", "KEB_URL", "", "base URL of the broker (default: keb login's, else the running keb dev's, from <dir>/dev-endpoints.json, else http://127.0.0.1:8080)")
	scopes := "scopes broker-upgrade:read and broker-upgrade:write"
	if c.scopes != nil {
		scopes = "scope " + strings.Join(c.scopes, " and ")
	}
	b.String(&c.token, "token", "KEB_TOKEN", "", "bearer token with "+scopes+" (default: keb login's, else one minted with the dev key in --dir)")
	b.String(&c.dir, "dir", "APP_DEV_DIR", ".keb", "dev state directory of the running keb dev (for the default URL and token)")
	bindListOutput(b, fs, &c.output)
}

// do sends a request and decodes a 2xx answer into out; any other answer
// is an error carrying the server's description.
func (c *operatorClient) do(ctx context.Context, method, path string, body []byte, out any) error {
	base := c.url
	if base == "" {
		base = devURL(c.dir)
	}
	token := c.token
	if token == "" {
		var err error
		scopes := c.scopes
		if scopes == nil {
			scopes = []string{auth.ScopeUpgradeRead, auth.ScopeUpgradeWrite}
		}
		if token, err = devTokenWith(c.dir, scopes...); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(base, "/")+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("bad --url %q: %w", base, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	client := c.client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Error, Description string }
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &e) == nil && e.Description != "" {
			msg = e.Description
		}
		return fmt.Errorf("the broker answered %s: %s", resp.Status, msg)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decoding the answer of %s %s: %w", method, path, err)
	}
	return nil
}

// printObject prints one answer as JSON or YAML.
func (c *operatorClient) printObject(v any) error { return printObject(c.stdout, c.output.format, v) }

func orchestrationsCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	return bindOrchestrations(fs, os.Stdout, os.Stderr)
}

// bindOrchestrations registers the flags of `keb orchestrations` and returns
// the function running its subcommands: list (default), show ID, operations
// ID [OPERATION_ID], cancel ID, retry ID.
func bindOrchestrations(fs *flag.FlagSet, stdout, stderr io.Writer) func(ctx context.Context, args []string) error {
	c := &operatorClient{stdout: stdout, stderr: stderr}
	b := config.NewBinder(fs)
	c.bind(b, fs)
	var state string
	var watch bool
	var poll time.Duration
	b.String(&state, "state", "KEB_ORCHESTRATIONS_STATE", "", "list only these states (comma-separated): orchestrations pending, in progress, canceling, canceled, succeeded, failed; operations also skipped")
	b.Bool(&watch, "watch", "KEB_ORCHESTRATIONS_WATCH", false, "show: print the orchestration each time it changes until it ends")
	b.Duration(&poll, "poll", "KEB_ORCHESTRATIONS_POLL", time.Second, "how often --watch looks")
	return func(ctx context.Context, args []string) error {
		if err := b.Err(); err != nil {
			return err
		}
		if err := c.output.check(); err != nil {
			return err
		}
		sub := "list"
		if len(args) > 0 {
			sub, args = args[0], args[1:]
		}
		want := map[string]int{"list": 0, "show": 1, "operations": 1, "cancel": 1, "retry": 1}
		n, ok := want[sub]
		if sub == "operations" && len(args) == 2 {
			n = 2
		}
		if !ok || len(args) != n {
			return fmt.Errorf("usage: keb orchestrations [list | show ID [--watch] | operations ID [OPERATION_ID] | cancel ID | retry ID]")
		}
		q := ""
		if state != "" {
			q = "?" + url.Values{"state": {state}}.Encode()
		}
		switch sub {
		case "list":
			var list []orchestration.Response
			if err := c.do(ctx, http.MethodGet, "/orchestrations"+q, nil, &list); err != nil {
				return err
			}
			return c.printOrchestrations(list)
		case "show":
			return c.show(ctx, args[0], watch, poll)
		case "operations":
			if len(args) == 2 {
				var d orchestration.OperationDetail
				if err := c.do(ctx, http.MethodGet, "/orchestrations/"+url.PathEscape(args[0])+"/operations/"+url.PathEscape(args[1]), nil, &d); err != nil {
					return err
				}
				if !c.output.structured() {
					return printObject(c.stdout, "yaml", d) // one operation's details: no table shows them
				}
				return c.printObject(d)
			}
			var page orchestration.PageResponse
			if err := c.do(ctx, http.MethodGet, "/orchestrations/"+url.PathEscape(args[0])+"/operations"+q, nil, &page); err != nil {
				return err
			}
			return c.printOperations(page)
		case "cancel":
			var out map[string]string
			if err := c.do(ctx, http.MethodPut, "/orchestrations/"+url.PathEscape(args[0])+"/cancel", nil, &out); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "orchestration %s is %s\n", out["orchestrationID"], out["state"])
			return nil
		default: // retry
			var out orchestration.RetryResponse
			if err := c.do(ctx, http.MethodPut, "/orchestrations/"+url.PathEscape(args[0])+"/retry", nil, &out); err != nil {
				return err
			}
			if c.output.structured() {
				return c.printObject(out)
			}
			fmt.Fprintf(stdout, "orchestration %s: %s\n", out.OrchestrationID, out.Msg)
			return nil
		}
	}
}

// show prints one orchestration; with watch, again at every change until
// it ends.
func (c *operatorClient) show(ctx context.Context, id string, watch bool, poll time.Duration) error {
	last := ""
	for {
		var o orchestration.Response
		if err := c.do(ctx, http.MethodGet, "/orchestrations/"+url.PathEscape(id), nil, &o); err != nil {
			return err
		}
		line := string(o.State) + "|" + o.Description
		if !watch {
			if c.output.structured() {
				return c.printObject(o)
			}
			return c.printOrchestrations([]orchestration.Response{o})
		}
		if line != last {
			last = line
			if c.output.structured() {
				if err := c.printObject(o); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(c.stdout, "%s  %s%-11s  %s\n", time.Now().UTC().Format("15:04:05"), dryRunMark(o), o.State, o.Description)
			}
		}
		switch o.State {
		case "succeeded", "failed", "canceled":
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// dryRunMark is "dry-run:" for an orchestration that only shows what it
// would do, so that it never reads like a real upgrade in a list or a watch.
func dryRunMark(o orchestration.Response) string {
	var p struct {
		DryRun bool `json:"dryRun"`
	}
	if json.Unmarshal(o.Parameters, &p) == nil && p.DryRun {
		return "dry-run:"
	}
	return ""
}

func (c *operatorClient) printOrchestrations(list []orchestration.Response) error {
	if len(list) == 0 && !c.output.structured() {
		fmt.Fprintln(c.stderr, "No orchestrations found")
		return nil
	}
	type o = orchestration.Response
	now := time.Now()
	id := col[o]{"ORCHESTRATION", func(o o) string { return o.OrchestrationID }}
	typ := col[o]{"TYPE", func(o o) string { return dryRunMark(o) + string(o.Type) }}
	state := col[o]{"STATE", func(o o) string { return string(o.State) }}
	ageCol := col[o]{"AGE", func(o o) string { return age(now, o.CreatedAt) }}
	created := col[o]{"CREATED", func(o o) string { return o.CreatedAt.UTC().Format(time.RFC3339) }}
	desc := col[o]{"DESCRIPTION", func(o o) string { return o.Description }}
	return printItems(c.stdout, c.output, pageOf(list), []col[o]{id, typ, state, ageCol, desc}, []col[o]{id, typ, state, ageCol, created, desc})
}

func (c *operatorClient) printOperations(ops orchestration.PageResponse) error {
	if len(ops.Data) == 0 && !c.output.structured() {
		fmt.Fprintln(c.stderr, "No operations found")
		return nil
	}
	type o = orchestration.OperationResponse
	window := func(o o) string {
		if len(o.MaintenanceWindowBegin) >= 16 && len(o.MaintenanceWindowEnd) >= 16 {
			return o.MaintenanceWindowBegin[11:16] + "-" + o.MaintenanceWindowEnd[11:16]
		}
		return ""
	}
	table := []col[o]{
		{"OPERATION", func(o o) string { return o.OperationID }},
		{"INSTANCE", func(o o) string { return o.InstanceID }},
		{"RUNTIME", func(o o) string { return o.RuntimeID }},
		{"PLAN", func(o o) string { return o.ServicePlanName }},
		{"REGION", func(o o) string { return o.Region }},
		{"WINDOW_UTC", window},
		{"STATE", func(o o) string {
			if o.DryRun {
				return "dry-run:" + string(o.State)
			}
			return string(o.State)
		}},
		{"DESCRIPTION", func(o o) string { return o.Description }},
	}
	if err := printItems(c.stdout, c.output, page[o]{Data: ops.Data, Count: ops.Count, TotalCount: ops.TotalCount}, table, nil); err != nil {
		return err
	}
	if ops.Count < ops.TotalCount {
		fmt.Fprintf(c.stderr, "%d of %d operations shown\n", ops.Count, ops.TotalCount)
	}
	return nil
}

// selectorKeys maps the keys of --target and --target-exclude to the
// selector's JSON fields (upstream kcp CLI's names).
var selectorKeys = map[string]string{"account": "globalAccount", "subaccount": "subAccount", "runtime-id": "runtimeID",
	"plan": "planName", "region": "region", "shoot": "shoot"}

// parseSelector reads "all" or "key=value,key=value" (ANDed).
func parseSelector(s string) (orchestration.Selector, error) {
	if strings.TrimSpace(s) == orchestration.TargetAll {
		return orchestration.Selector{Target: orchestration.TargetAll}, nil
	}
	fields := map[string]string{}
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		key, known := selectorKeys[k]
		if !ok || !known || v == "" {
			return orchestration.Selector{}, fmt.Errorf("bad selector %q: want all, or key=value[,key=value] with keys account, subaccount, runtime-id, plan, region, shoot", s)
		}
		fields[key] = v
	}
	raw, _ := json.Marshal(fields)
	var sel orchestration.Selector
	err := json.Unmarshal(raw, &sel)
	return sel, err
}

// selectorList is a repeatable selector flag; its environment variable
// (selectors separated by ";") applies when the flag is not given.
type selectorList struct {
	env  string
	list []orchestration.Selector
	set  bool
}

func (l *selectorList) String() string { return "" }

func (l *selectorList) Set(s string) error {
	sel, err := parseSelector(s)
	if err != nil {
		return err
	}
	l.list, l.set = append(l.list, sel), true
	return nil
}

// selectors are the flag's selectors, else the environment's.
func (l *selectorList) selectors() (orchestration.Selectors, error) {
	if l.set {
		return l.list, nil
	}
	var out orchestration.Selectors
	for part := range strings.SplitSeq(os.Getenv(l.env), ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		sel, err := parseSelector(part)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.env, err)
		}
		out = append(out, sel)
	}
	return out, nil
}

func upgradeCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	return bindUpgrade(fs, os.Stdout, os.Stderr)
}

// bindUpgrade registers the flags of `keb upgrade kyma|cluster` and returns
// the function that POSTs the orchestration and prints its ID.
func bindUpgrade(fs *flag.FlagSet, stdout, stderr io.Writer) func(ctx context.Context, args []string) error {
	c := &operatorClient{stdout: stdout, stderr: stderr}
	b := config.NewBinder(fs)
	c.bind(b, fs)
	include, exclude := &selectorList{env: "KEB_UPGRADE_TARGET"}, &selectorList{env: "KEB_UPGRADE_TARGET_EXCLUDE"}
	fs.Var(include, "target", "runtimes to upgrade: all, or key=value[,key=value] (ANDed; keys account, subaccount, runtime-id, plan, region, shoot); repeatable, ORed; the variable separates selectors with ; (env KEB_UPGRADE_TARGET)")
	fs.Var(exclude, "target-exclude", "runtimes to leave out, as --target; repeatable; wins over --target (env KEB_UPGRADE_TARGET_EXCLUDE)")
	var p orchestration.Parameters
	var kv orchestration.Kyma
	var k8s orchestration.Kubernetes
	b.String(&p.Strategy.Schedule, "schedule", "KEB_UPGRADE_SCHEDULE", "immediate", "immediate, or maintenanceWindow (each runtime in its window)")
	b.Int(&p.Strategy.Parallel.Workers, "parallel-workers", "KEB_UPGRADE_WORKERS", 1, "upgrades in progress at once")
	b.Bool(&p.DryRun, "dry-run", "KEB_UPGRADE_DRY_RUN", false, "walk the upgrade's steps without changing any resource")
	b.String(&kv.Version, "version", "KEB_UPGRADE_KYMA_VERSION", "", "kyma: the Kyma version (default: the broker's APP_KYMA_VERSION)")
	b.String(&kv.Channel, "channel", "KEB_UPGRADE_KYMA_CHANNEL", "", "kyma: the Kyma CR's channel (default: unchanged)")
	b.String(&k8s.Version, "kubernetes-version", "KEB_UPGRADE_KUBERNETES_VERSION", "", "cluster: the Kubernetes version")
	b.String(&k8s.MachineImage, "machine-image", "KEB_UPGRADE_MACHINE_IMAGE", "", "cluster: the machine image")
	b.String(&k8s.MachineImageVersion, "machine-image-version", "KEB_UPGRADE_MACHINE_IMAGE_VERSION", "", "cluster: the machine image version")
	return func(ctx context.Context, args []string) error {
		if err := b.Err(); err != nil {
			return err
		}
		if len(args) != 1 || (args[0] != "kyma" && args[0] != "cluster") {
			return fmt.Errorf("usage: keb upgrade kyma|cluster --target ... [flags]")
		}
		in, err := include.selectors()
		if err != nil {
			return err
		}
		ex, err := exclude.selectors()
		if err != nil {
			return err
		}
		if len(in) == 0 {
			return fmt.Errorf("name the runtimes with --target (all, or e.g. plan=azure,region=westeurope)")
		}
		p.Targets = orchestration.Targets{Include: in, Exclude: ex}
		p.Strategy.Type = orchestration.StrategyParallel
		if args[0] == "kyma" {
			if k8s != (orchestration.Kubernetes{}) {
				return fmt.Errorf("--kubernetes-version and --machine-image* are flags of `keb upgrade cluster`")
			}
			p.Kyma = &kv
		} else {
			if kv != (orchestration.Kyma{}) {
				return fmt.Errorf("--version and --channel are flags of `keb upgrade kyma`")
			}
			if k8s != (orchestration.Kubernetes{}) {
				p.Kubernetes = &k8s
			}
		}
		body, err := json.Marshal(p)
		if err != nil {
			return err
		}
		var out map[string]string
		if err := c.do(ctx, http.MethodPost, "/upgrade/"+args[0], body, &out); err != nil {
			return err
		}
		if c.output.structured() {
			return c.printObject(out)
		}
		kind := "orchestration"
		if p.DryRun {
			kind = "dry-run orchestration (nothing will change)"
		}
		fmt.Fprintf(stdout, "%s %s created; follow it with: keb orchestrations show %s --watch\n", kind, out["orchestrationID"], out["orchestrationID"])
		return nil
	}
}
