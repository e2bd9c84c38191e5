package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/buildinfo"
	"github.com/kyma-keb/keb/testing/k8stest"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// kcp is a real control plane for the commands that read it (keb pool).
var kcp *k8stest.Environment

// envRunAsKeb makes the test binary keb itself, for tests that need keb as
// a process of its own (signals, locks held by another process).
const envRunAsKeb = "KEB_TEST_RUN_AS_KEB"

func TestMain(m *testing.M) {
	if os.Getenv(envRunAsKeb) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	// A keb login of the person running the tests must not send the
	// commands under test to their broker.
	if os.Getenv("KEB_CONFIG") == "" {
		os.Setenv("KEB_CONFIG", filepath.Join(os.TempDir(), fmt.Sprintf("keb-test-%d-no-login.json", os.Getpid())))
	}
	os.Exit(k8stest.Run(m, &kcp, pgtest.Run))
}

// flagOnly lists, per command, the flags that deliberately have no
// environment variable: they choose what a one-off invocation prints rather
// than configure keb.
var flagOnly = map[string]map[string]bool{
	"token": {"client-secret": true},
	// The question `keb pool rules` answers, per invocation.
	"pool": {"plan": true, "platform-region": true, "region": true, "provider": true, "type": true, "state": true},
}

// sharedWithServe: command takes keb serve's setting name, which its help
// leaves to serve's page (serve and dev list all of theirs).
func sharedWithServe(command, name string) bool {
	return command != "serve" && command != "dev" && command != "sim" && serveFlagNames()[name]
}

func runKeb(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// kebProcess is keb started by startKeb; exited receives the result of
// its one Wait (who takes it puts it back, for the cleanup).
type kebProcess struct {
	*exec.Cmd
	exited chan error
}

// startKeb starts keb with args as a process of its own, its output to
// stdout and stderr; the test's cleanup kills it.
func startKeb(t *testing.T, stdout, stderr io.Writer, args ...string) kebProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envRunAsKeb+"=1")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A descendant that kept its stderr would hold Wait (and the stderr
	// the test reports) past its exit.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := kebProcess{cmd, make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// kcpClient is a client of the tests' control plane, with keb's scheme.
func kcpClient(t *testing.T) client.Client {
	t.Helper()
	scheme, err := app.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(kcp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// captureStdout runs fn with os.Stdout redirected, for the commands that
// print there rather than to run's stdout. Tests using it must not be
// parallel.
func captureStdout(t *testing.T, fn func()) string { return capture(t, &os.Stdout, fn) }

// captureStderr is captureStdout for os.Stderr, where keb's logger writes.
func captureStderr(t *testing.T, fn func()) string { return capture(t, &os.Stderr, fn) }

func capture(t *testing.T, f **os.File, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	orig := *f
	*f = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() { *f = orig }()
	fn()
	*f = orig
	w.Close()
	out := <-done
	r.Close()
	return out
}

func TestTopLevelHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{name: "--help", args: []string{"--help"}, wantCode: 0},
		{name: "-h", args: []string{"-h"}, wantCode: 0},
		{name: "help", args: []string{"help"}, wantCode: 0},
		{name: "no arguments", args: nil, wantCode: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runKeb(tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			if !strings.Contains(out, "Usage: keb <command>") {
				t.Errorf("no usage line in:\n%s", out)
			}
			for _, c := range commands() {
				if !regexp.MustCompile(`(?m)^  ` + c.name + ` +` + regexp.QuoteMeta(c.summary) + `$`).MatchString(out) {
					t.Errorf("command %q with its summary not listed in:\n%s", c.name, out)
				}
			}
			if errOut != "" {
				t.Errorf("help wrote to stderr: %s", errOut)
			}
		})
	}
}

// helpSections reads each command's help page into its flag entries,
// keyed by command and flag name, each with its whole usage text.
func helpSections(t *testing.T) map[string]map[string]string {
	t.Helper()
	sections := map[string]map[string]string{}
	entry := regexp.MustCompile(`^  -([a-z0-9-]+)`)
	for _, c := range commands() {
		code, help, errOut := runKeb(c.name, "--help")
		if code != 0 {
			t.Fatalf("keb %s --help: exit code %d: %s", c.name, code, errOut)
		}
		sections[c.name] = map[string]string{}
		var name string
		for _, line := range strings.Split(help, "\n") {
			if m := entry.FindStringSubmatch(line); m != nil {
				name = m[1]
				sections[c.name][name] = line
				continue
			}
			if name != "" && strings.HasPrefix(line, "    ") {
				sections[c.name][name] += "\n" + line
			}
		}
	}
	return sections
}

var envMention = regexp.MustCompile(`\(env (APP|KEB)_[A-Z0-9_]+\)`)

func TestHelpNamesTheVariableOfEveryFlag(t *testing.T) {
	t.Parallel()
	sections := helpSections(t)
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
			c.flags(fs)
			fs.VisitAll(func(f *flag.Flag) {
				text, listed := sections[c.name][f.Name]
				if !listed && sharedWithServe(c.name, f.Name) {
					// Listed once, on serve's page, which the command's page names.
					text, listed = sections["serve"][f.Name]
				}
				if !listed {
					t.Errorf("flag --%s of `keb %s` is missing from the help", f.Name, c.name)
					return
				}
				hasEnv := envMention.MatchString(text)
				switch {
				case flagOnly[c.name][f.Name] && hasEnv:
					t.Errorf("--%s is listed as flag-only but names a variable; update flagOnly: %s", f.Name, text)
				case !flagOnly[c.name][f.Name] && !hasEnv:
					t.Errorf("help of --%s of `keb %s` names no (env APP_...) or (env KEB_...) variable:\n%s", f.Name, c.name, text)
				}
			})
			for name := range sections[c.name] {
				if fs.Lookup(name) == nil {
					t.Errorf("help lists --%s, which `keb %s` does not accept", name, c.name)
				}
			}
		})
	}
}

func TestCommandHelp(t *testing.T) {
	t.Parallel()
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runKeb(c.name, "--help")
			if code != 0 {
				t.Errorf("`keb %s --help` exit code %d, want 0; stderr:\n%s", c.name, code, errOut)
			}
			if !strings.Contains(out, "Usage: keb "+c.name) || !strings.Contains(out, c.summary) {
				t.Errorf("`keb %s --help` printed:\n%s", c.name, out)
			}
			if errOut != "" {
				t.Errorf("`keb %s --help` wrote to stderr: %s", c.name, errOut)
			}
			fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
			c.flags(fs)
			fs.VisitAll(func(f *flag.Flag) {
				listed := strings.Contains(out, "  -"+f.Name+" ") || strings.Contains(out, "  -"+f.Name+"\n") || strings.Contains(out, "  -"+f.Name+"\t")
				switch {
				case sharedWithServe(c.name, f.Name) && listed:
					t.Errorf("`keb %s --help` repeats keb serve's --%s; it belongs on serve's page", c.name, f.Name)
				case sharedWithServe(c.name, f.Name) && !strings.Contains(out, "See 'keb serve --help'"):
					t.Errorf("`keb %s` takes keb serve's --%s, but its help does not point at `keb serve --help`:\n%s", c.name, f.Name, out)
				case !sharedWithServe(c.name, f.Name) && !listed:
					t.Errorf("flag --%s not in `keb %s --help`", f.Name, c.name)
				}
			})
		})
	}
}

func TestBadInvocations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr []string
	}{
		{name: "unknown command", args: []string{"bogus"}, wantCode: 2, wantStderr: []string{`unknown command "bogus"`, "keb --help"}},
		{name: "a typo of a command", args: []string{"runtime"}, wantCode: 2, wantStderr: []string{`unknown command "runtime"`, "Did you mean this?\n\truntimes\n"}},
		{name: "a typo of an alias", args: []string{"orchestraton"}, wantCode: 2, wantStderr: []string{"\torchestration\n", "\torchestrations\n"}},
		{name: "flag as command", args: []string{"--port", "8080"}, wantCode: 2, wantStderr: []string{`unknown command "--port"`}},
		{name: "unknown flag", args: []string{"serve", "--no-such-flag"}, wantCode: 2, wantStderr: []string{"no-such-flag", "See 'keb serve --help' for usage."}},
		{name: "a typo of a flag", args: []string{"serve", "--databse-url=x"}, wantCode: 2, wantStderr: []string{"databse-url", "Did you mean this?\n\t--database-url\n", "See 'keb serve --help'"}},
		{name: "a typo of a flag with a short form", args: []string{"runtimes", "--sate", "failed"}, wantCode: 2, wantStderr: []string{"Did you mean this?\n\t--state\n\n"}},
		{name: "a flag nothing resembles", args: []string{"runtimes", "--xyzzy"}, wantCode: 2, wantStderr: []string{"xyzzy", "See 'keb runtimes --help'"}},
		{name: "malformed flag value", args: []string{"serve", "--port", "eighty"}, wantCode: 2, wantStderr: []string{"eighty", "-port", "See 'keb serve --help'"}},
		{name: "migrate without action", args: []string{"migrate"}, wantCode: 1, wantStderr: []string{"keb migrate:", "up|down|status"}},
		{name: "migrate with two actions", args: []string{"migrate", "up", "down"}, wantCode: 1, wantStderr: []string{"up|down|status"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runKeb(tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.wantCode, errOut)
			}
			for _, w := range tc.wantStderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, errOut)
				}
			}
			if out != "" {
				t.Errorf("stdout: %s", out)
			}
		})
	}
}

func TestMalformedEnvironmentIsReported(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{name: "serve with a bad port", args: []string{"serve"}, env: map[string]string{"APP_PORT": "eighty"}, want: []string{"keb serve:", `APP_PORT="eighty"`}},
		{name: "serve with a bad bool", args: []string{"serve"}, env: map[string]string{"APP_DATABASE_MIGRATE": "maybe"}, want: []string{"APP_DATABASE_MIGRATE"}},
		{name: "dev with a bad duration", args: []string{"dev"}, env: map[string]string{"APP_BROKER_RETRY_AFTER": "10"}, want: []string{"keb dev:", "APP_BROKER_RETRY_AFTER"}},
		{name: "token with a bad ttl", args: []string{"token"}, env: map[string]string{"KEB_TOKEN_TTL": "1 hour"}, want: []string{"keb token:", "KEB_TOKEN_TTL"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, errOut := runKeb(tc.args...)
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, errOut)
				}
			}
		})
	}
}

// keb serve with nothing set names every required setting at once.
func TestServeListsEveryMissingSetting(t *testing.T) {
	for _, k := range []string{"APP_DATABASE_URL", "DATABASE_URL", "APP_DATABASE_SECRET_KEY", "APP_AUTH_JWKS_URLS",
		"APP_AUTH_PUBLIC_KEY_FILES", "APP_KCP_KUBECONFIG", "KUBECONFIG", "KUBERNETES_SERVICE_HOST"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	code, _, errOut := runKeb("serve")
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	for _, w := range []string{"missing required settings", "APP_DATABASE_URL", "APP_DATABASE_SECRET_KEY",
		"APP_AUTH_JWKS_URLS or APP_AUTH_PUBLIC_KEY_FILES", "APP_KCP_KUBECONFIG"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr does not name %q:\n%s", w, errOut)
		}
	}
	// Set, they leave only what is still missing.
	t.Setenv("APP_DATABASE_SECRET_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	t.Setenv("APP_WORKERS", "0")
	_, _, errOut = runKeb("serve")
	if strings.Contains(errOut, "APP_DATABASE_SECRET_KEY") || strings.Contains(errOut, "APP_KCP_KUBECONFIG") ||
		!strings.Contains(errOut, "APP_DATABASE_URL") {
		t.Errorf("stderr after setting the key and APP_WORKERS=0:\n%s", errOut)
	}
}

func TestMigrateWithoutDatabase(t *testing.T) {
	t.Setenv("APP_DATABASE_URL", "")
	t.Setenv("DATABASE_URL", "")
	os.Unsetenv("APP_DATABASE_URL")
	os.Unsetenv("DATABASE_URL")
	code, _, errOut := runKeb("migrate", "status")
	if code != 1 || !strings.Contains(errOut, "no database") || !strings.Contains(errOut, "APP_DATABASE_URL") {
		t.Errorf("exit code %d, stderr %q; want 1 and a message naming APP_DATABASE_URL", code, errOut)
	}
}

func TestMigrateAgainstDatabase(t *testing.T) {
	dbURL := pgtest.NewDatabase(t) // at head
	status := regexp.MustCompile(`schema version (\d+), head (\d+), at head: (true|false)`)

	migrate := func(args ...string) string {
		t.Helper()
		var code int
		var errOut string
		out := captureStdout(t, func() { code, _, errOut = runKeb(append([]string{"migrate"}, args...)...) })
		if code != 0 {
			t.Fatalf("keb migrate %v: exit code %d, stderr:\n%s", args, code, errOut)
		}
		return out
	}

	out := migrate("--database-url", dbURL, "status")
	m := status.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("`keb migrate status` printed %q, want the schema version", out)
	}
	head := m[2]
	if m[1] != head || m[3] != "true" || head == "0" {
		t.Fatalf("migrated database: %q", out)
	}

	// The database can come from the environment as well.
	t.Setenv("APP_DATABASE_URL", dbURL)
	if out := migrate("status"); !strings.Contains(out, "at head: true") {
		t.Errorf("status via APP_DATABASE_URL: %q", out)
	}

	if out := migrate("down"); !strings.Contains(out, "rolled back migration "+head) {
		t.Errorf("`keb migrate down` printed %q", out)
	}
	if m := status.FindStringSubmatch(migrate("status")); m == nil || m[1] == head || m[3] != "false" {
		t.Errorf("status after down: %v", m)
	}
	// --to replays one migration at a time: down once more, up to the one
	// before head, and no further.
	headNum, _ := strconv.Atoi(head)
	prev := strconv.Itoa(headNum - 1)
	if out := migrate("down"); !strings.Contains(out, "rolled back migration "+prev) {
		t.Errorf("second `keb migrate down` printed %q", out)
	}
	if out := migrate("up", "--to", prev); !strings.Contains(out, "applied 1 migration(s): ["+prev+"]") {
		t.Errorf("`keb migrate up --to %s` printed %q", prev, out)
	}
	if m := status.FindStringSubmatch(migrate("status")); m == nil || m[1] != prev {
		t.Errorf("status after up --to %s: %v", prev, m)
	}
	if out := migrate("up"); !strings.Contains(out, "applied 1 migration(s): ["+head+"]") {
		t.Errorf("`keb migrate up` printed %q", out)
	}
	if out := migrate("up"); !strings.Contains(out, "applied 0 migration(s)") {
		t.Errorf("second `keb migrate up` printed %q", out)
	}
	if out := migrate("status"); !strings.Contains(out, "schema version "+head+", head "+head+", at head: true") {
		t.Errorf("status after up: %q", out)
	}

	code, _, errOut := runKeb("migrate", "sideways")
	if code != 1 || !strings.Contains(errOut, `unknown migrate action "sideways"`) {
		t.Errorf("`keb migrate sideways`: exit %d, stderr %q", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	var code int
	out := captureStdout(t, func() { code, _, _ = runKeb("version") })
	lines := strings.Split(strings.TrimSpace(out), "\n")
	info := buildinfo.Read()
	if code != 0 || len(lines) != 4 || lines[0] != version || !strings.HasPrefix(lines[1], "commit "+info.Commit) ||
		lines[2] != fmt.Sprintf("schema version %d", info.SchemaVersion) || info.SchemaVersion == 0 {
		t.Errorf("`keb version`: exit %d, printed %q, want %q, its commit and schema version", code, out, version)
	}
}

// `keb --version` is `keb version`, and `keb help X` is `keb X --help`, as
// people type them from other CLIs.
func TestVersionAndHelpSpellings(t *testing.T) {
	var code int
	want := captureStdout(t, func() { runKeb("version") })
	for _, spelling := range []string{"--version", "-version"} {
		got := captureStdout(t, func() { code, _, _ = runKeb(spelling) })
		if code != 0 || got != want {
			t.Errorf("`keb %s`: exit %d, printed %q, want %q", spelling, code, got, want)
		}
	}
	for _, c := range []struct{ help, direct []string }{
		{[]string{"help", "runtimes"}, []string{"runtimes", "--help"}},
		{[]string{"help", "rt"}, []string{"runtimes", "--help"}},
		{[]string{"help", "migrate"}, []string{"migrate", "--help"}},
	} {
		code, got, _ := runKeb(c.help...)
		_, want, _ := runKeb(c.direct...)
		if code != 0 || got != want || !strings.HasPrefix(got, "Usage: keb "+c.direct[0]) {
			t.Errorf("`keb %s`: exit %d, printed %q, want `keb %s`'s help %q", strings.Join(c.help, " "), code, got, strings.Join(c.direct, " "), want)
		}
	}
	if code, _, errOut := runKeb("help", "bogus"); code != 2 || !strings.Contains(errOut, `unknown command "bogus"`) {
		t.Errorf("`keb help bogus`: exit %d, stderr %q", code, errOut)
	}
}

func TestMigrateHelpNamesItsSubcommands(t *testing.T) {
	t.Parallel()
	code, out, _ := runKeb("migrate", "--help")
	if code != 0 || !strings.Contains(out, "Usage: keb migrate up|down|status [flags]") {
		t.Errorf("exit %d, help:\n%s", code, out)
	}
}

// The top-level help is one page: one line per command, no command's flags.
func TestTopLevelHelpIsOnePage(t *testing.T) {
	t.Parallel()
	_, out, _ := runKeb("--help")
	if lines := strings.Count(out, "\n"); lines > len(commands())+12 {
		t.Errorf("top-level help is %d lines for %d commands:\n%s", lines, len(commands()), out)
	}
	if strings.Contains(out, "  -") {
		t.Errorf("top-level help lists flags:\n%s", out)
	}
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	for word, want := range map[string]string{"runtime": "runtimes", "serv": "serve", "migrat": "migrate", "pol": "pool", "clenaup": "cleanup", "xyzzy": ""} {
		got := strings.Join(suggest(word), ",")
		if got != want {
			t.Errorf("suggest(%q) = %q, want %q", word, got, want)
		}
	}
}

// TestServeLogsUpstreamSettings: keb serve started with an environment
// from upstream KEB's chart says, once each and before it can stop for
// anything else, which of upstream's names it read as its own, which
// keb's own names overrode, and which mean nothing to keb; the database
// password it composed into the URL is never logged.
func TestServeLogsUpstreamSettings(t *testing.T) {
	for _, k := range []string{"APP_DATABASE_URL", "DATABASE_URL", "APP_BROKER_ENABLED_PLANS", "APP_AUTH_JWKS_URLS",
		"APP_AUTH_PUBLIC_KEY_FILES", "APP_KCP_KUBECONFIG", "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "APP_LOG_FORMAT"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for k, v := range map[string]string{
		"APP_BROKER_ENABLE_PLANS": "azure,aws", "APP_DATABASE_HOST": "127.0.0.1", "APP_DATABASE_PORT": "1",
		"APP_DATABASE_USER": "keb", "APP_DATABASE_PASSWORD": "upstream-pw-42", "APP_DATABASE_NAME": "broker",
		"APP_BROKER_TRIAL_DOCS_URL": "https://upstream.example", "APP_TRIAL_DOCS_URL": "https://keb.example",
		"APP_UPDATE_WORKERS_AMOUNT": "5",
	} {
		t.Setenv(k, v)
	}
	var code int
	var errOut string
	logged := captureStderr(t, func() { code, _, errOut = runKeb("serve") })
	// It stops for the token issuer's keys, which upstream's names do not
	// supply, but not for the database.
	if code != 1 || !strings.Contains(errOut, "APP_AUTH_JWKS_URLS") || strings.Contains(errOut, "APP_DATABASE_URL") {
		t.Errorf("exit %d, stderr %s", code, errOut)
	}
	for _, want := range []string{
		`read upstream KEB's APP_BROKER_ENABLE_PLANS as APP_BROKER_ENABLED_PLANS`,
		`read upstream KEB's APP_DATABASE_HOST as APP_DATABASE_URL`,
		`ignored upstream KEB's APP_BROKER_TRIAL_DOCS_URL: keb's own APP_TRIAL_DOCS_URL is set too, and wins`,
		`ignored upstream KEB's APP_UPDATE_WORKERS_AMOUNT: keb has no setting of that meaning`,
	} {
		if n := strings.Count(logged, want); n != 1 {
			t.Errorf("logged %q %d times, want once:\n%s", want, n, logged)
		}
	}
	if strings.Contains(logged+errOut, "upstream-pw-42") {
		t.Errorf("the database password is in the output:\n%s", logged)
	}
}
