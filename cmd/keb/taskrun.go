package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/controlplane"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/orchestration"
	"github.com/kyma-keb/keb/internal/runtimelisting"
)

// taskrunOptions is one `keb taskrun` invocation.
type taskrunOptions struct {
	url, token, dir, kcpKubeconfig string
	parallelism                    int
	include, exclude               *selectorList
	stdout, stderr                 io.Writer
}

func taskrunCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	return bindTaskrun(fs, os.Stdout, os.Stderr)
}

// bindTaskrun registers the flags of `keb taskrun` and returns the function
// that runs the command once per selected runtime.
func bindTaskrun(fs *flag.FlagSet, stdout, stderr io.Writer) func(ctx context.Context, args []string) error {
	o := &taskrunOptions{stdout: stdout, stderr: stderr,
		include: &selectorList{env: "KEB_TASKRUN_TARGET"}, exclude: &selectorList{env: "KEB_TASKRUN_TARGET_EXCLUDE"}}
	b := config.NewBinder(fs)
	b.String(&o.url, "url", "KEB_URL", "", "base URL of the broker (default: keb login's, else the running keb dev's, from <dir>/url, else http://127.0.0.1:8080)")
	b.String(&o.token, "token", "KEB_TOKEN", "", "bearer token with scope cld:read, to list the runtimes (default: keb login's, else one minted with the dev key in --dir)")
	b.String(&o.dir, "dir", "APP_DEV_DIR", ".keb", "dev state directory of the running keb dev (for the default URL, token and control-plane kubeconfig)")
	b.String(&o.kcpKubeconfig, "kcp-kubeconfig", "KEB_KCP_KUBECONFIG", "", "kubeconfig of the control plane, to read the runtimes' admin kubeconfig Secrets (default: <dir>/kcp.kubeconfig of keb dev, else $KUBECONFIG)")
	b.Int(&o.parallelism, "parallelism", "KEB_TASKRUN_PARALLELISM", 4, "how many runtimes run the command at once")
	fs.Var(o.include, "target", "runtimes to run on: all, or key=value[,key=value] (ANDed; keys account, subaccount, runtime-id, plan, region, shoot); repeatable, ORed; the variable separates selectors with ; (env KEB_TASKRUN_TARGET)")
	fs.Var(o.exclude, "target-exclude", "runtimes to leave out, as --target; repeatable; wins over --target (env KEB_TASKRUN_TARGET_EXCLUDE)")
	return func(ctx context.Context, args []string) error {
		if err := b.Err(); err != nil {
			return err
		}
		if len(args) == 0 {
			return errors.New("name the command after --, e.g. keb taskrun --target all -- kubectl get ns")
		}
		if o.parallelism < 1 {
			return fmt.Errorf("bad --parallelism %d: at least 1", o.parallelism)
		}
		return o.run(ctx, args)
	}
}

// taskResult is how the command ended on one runtime.
type taskResult struct {
	rt       runtimelisting.RuntimeDTO
	exitCode int
	err      error // the command could not run, or was stopped
}

func (o *taskrunOptions) run(ctx context.Context, command []string) error {
	include, err := o.include.selectors()
	if err != nil {
		return err
	}
	exclude, err := o.exclude.selectors()
	if err != nil {
		return err
	}
	if len(include) == 0 {
		return errors.New("name the runtimes with --target (all, or e.g. plan=azure,region=westeurope)")
	}
	runtimes, err := o.runtimes(ctx, include, exclude)
	if err != nil {
		return err
	}
	if len(runtimes) == 0 {
		fmt.Fprintln(o.stderr, "no runtime matches the targets")
		return nil
	}
	kcp, err := o.controlPlane()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "keb-taskrun-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	out := &prefixedOutput{stdout: o.stdout, stderr: o.stderr}
	results := make([]taskResult, len(runtimes))
	slots := make(chan struct{}, o.parallelism)
	var wg sync.WaitGroup
	for i, rt := range runtimes {
		results[i] = taskResult{rt: rt, exitCode: -1, err: errors.New("not run: stopped")}
		select {
		case <-ctx.Done():
		case slots <- struct{}{}:
			wg.Go(func() {
				defer func() { <-slots }()
				results[i] = o.runOne(ctx, kcp, tmp, rt, command, out)
			})
			continue
		}
		break
	}
	wg.Wait()
	return o.summary(results)
}

// runOne runs the command against one runtime with its admin kubeconfig.
func (o *taskrunOptions) runOne(ctx context.Context, kcp client.Reader, tmp string, rt runtimelisting.RuntimeDTO, command []string, out *prefixedOutput) taskResult {
	res := taskResult{rt: rt, exitCode: -1}
	prefix := "[" + orDash(rt.ShootName) + " " + rt.RuntimeID + "] "
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: controlplane.Namespace, Name: im.KubeconfigSecretName(rt.RuntimeID)}
	if err := kcp.Get(ctx, key, secret); err != nil {
		res.err = fmt.Errorf("reading the admin kubeconfig %s: %w", key, err)
		out.line(true, prefix, res.err.Error())
		return res
	}
	path := filepath.Join(tmp, rt.RuntimeID+".kubeconfig")
	if err := os.WriteFile(path, secret.Data[im.KubeconfigKey], 0o600); err != nil {
		res.err = err
		return res
	}
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+path, "RUNTIME_ID="+rt.RuntimeID, "SHOOT_NAME="+rt.ShootName,
		"INSTANCE_ID="+rt.InstanceID, "GLOBALACCOUNT_ID="+rt.GlobalAccountID, "SUBACCOUNT_ID="+rt.SubAccountID,
		"PLAN_NAME="+rt.ServicePlanName)
	// Ctrl-C: the command and whatever it started (its own process group)
	// are asked to stop with SIGTERM; 5 s later Wait gives up on them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	stdout, stderr := out.writer(false, prefix), out.writer(true, prefix)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	defer stdout.flush()
	defer stderr.flush()
	if err := cmd.Start(); err != nil {
		res.err = err
		out.line(true, prefix, err.Error())
		return res
	}
	err := cmd.Wait()
	res.exitCode = cmd.ProcessState.ExitCode()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		res.err = err
	}
	if ctx.Err() != nil && res.exitCode != 0 {
		res.err = errors.New("stopped")
	}
	return res
}

// summary prints each runtime's outcome and fails when any did not exit 0.
func (o *taskrunOptions) summary(results []taskResult) error {
	failed := 0
	sort.SliceStable(results, func(i, j int) bool { return results[i].exitCode == 0 && results[j].exitCode != 0 })
	fmt.Fprintln(o.stdout)
	status := func(r taskResult) string {
		if r.err != nil {
			return r.err.Error()
		}
		return fmt.Sprint(r.exitCode)
	}
	for _, r := range results {
		if r.exitCode != 0 || r.err != nil {
			failed++
		}
	}
	type r = taskResult
	_ = printTable(o.stdout, listOutput{format: "table"}, results, []col[r]{
		{"RUNTIME", func(r r) string { return r.rt.RuntimeID }},
		{"SHOOT", func(r r) string { return r.rt.ShootName }},
		{"INSTANCE", func(r r) string { return r.rt.InstanceID }},
		{"EXIT", status},
	}, nil)
	fmt.Fprintf(o.stdout, "%d runtimes: %d succeeded, %d failed\n", len(results), len(results)-failed, failed)
	if failed > 0 {
		return fmt.Errorf("the command failed on %d of %d runtimes", failed, len(results))
	}
	return nil
}

// runtimes lists the runtimes the selectors pick, as orchestrations do:
// target all is every runtime provisioned successfully and not being
// deprovisioned; a selector's fields are ANDed, selectors ORed, exclusions
// win.
func (o *taskrunOptions) runtimes(ctx context.Context, include, exclude orchestration.Selectors) ([]runtimelisting.RuntimeDTO, error) {
	base := o.url
	if base == "" {
		base = devURL(o.dir)
	}
	u, err := url.Parse(strings.TrimRight(base, "/") + "/info/runtimes")
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("bad --url %q: want e.g. http://127.0.0.1:8080", base)
	}
	token := o.token
	if token == "" {
		if token, err = devToken(o.dir); err != nil {
			return nil, err
		}
	}
	page, err := fetchPages(ctx, &http.Client{Timeout: 30 * time.Second}, *u, token,
		url.Values{"state": {"succeeded"}}, runtimelisting.MaxPageSize, true)
	if err != nil {
		return nil, err
	}
	var out []runtimelisting.RuntimeDTO
	for _, rt := range page.Data {
		if rt.RuntimeID != "" && selects(include, rt) && !selects(exclude, rt) {
			out = append(out, rt)
		}
	}
	return out, nil
}

func selects(sels orchestration.Selectors, rt runtimelisting.RuntimeDTO) bool {
	for _, s := range sels {
		if s.Target == orchestration.TargetAll {
			return true
		}
		if matchField(s.GlobalAccount, rt.GlobalAccountID) && matchField(s.SubAccount, rt.SubAccountID) &&
			matchField(s.RuntimeID, rt.RuntimeID) && matchField(s.PlanName, rt.ServicePlanName) &&
			matchField(s.Region, rt.ProviderRegion) && matchField(s.Shoot, rt.ShootName) {
			return true
		}
	}
	return false
}

func matchField(want, have string) bool { return want == "" || want == have }

// controlPlane connects with the operator's control-plane kubeconfig.
func (o *taskrunOptions) controlPlane() (client.Reader, error) {
	path := o.kcpKubeconfig
	if path == "" {
		if p := filepath.Join(o.dir, "kcp.kubeconfig"); fileExists(p) {
			path = p
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the control plane's kubeconfig (--kcp-kubeconfig): %w", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("connecting to the control plane: %w", err)
	}
	return c, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// prefixedOutput writes the commands' output line by line, each line whole
// and prefixed with its runtime, however many commands write at once.
type prefixedOutput struct {
	mu             sync.Mutex
	stdout, stderr io.Writer
}

func (p *prefixedOutput) line(toStderr bool, prefix, text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.stdout
	if toStderr {
		w = p.stderr
	}
	fmt.Fprintln(w, prefix+text)
}

// writer is an io.Writer writing whole lines with the prefix; flush writes
// a last line without its newline.
func (p *prefixedOutput) writer(toStderr bool, prefix string) *lineWriter {
	return &lineWriter{out: p, toStderr: toStderr, prefix: prefix}
}

type lineWriter struct {
	out      *prefixedOutput
	toStderr bool
	prefix   string
	partial  []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.partial = append(w.partial, b...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.out.line(w.toStderr, w.prefix, string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > 1<<20 { // a line without end: written in pieces
		w.flush()
	}
	return len(b), nil
}

func (w *lineWriter) flush() {
	if len(w.partial) > 0 {
		w.out.line(w.toStderr, w.prefix, string(w.partial))
		w.partial = nil
	}
}
