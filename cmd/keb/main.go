// Command keb is the Kyma Environment Broker: an Open Service Broker that
// provisions and deprovisions Kyma runtimes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kyma-keb/keb/internal/buildinfo"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/logging"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one `keb <name>` subcommand.
type command struct {
	name    string
	summary string
	// flags registers the command's flags on fs and returns the function that
	// runs it once the flags are parsed.
	flags func(fs *flag.FlagSet) func(ctx context.Context, args []string) error
}

func commands() []command {
	return []command{
		{"serve", "run the broker (production)", serveCommand},
		{"dev", "run the broker with an embedded PostgreSQL and dev auth (no set-up needed)", devCommand},
		{"sim", "run the stand-ins (infrastructure manager, Lifecycle Manager, AVS, EDP, IAS, Director) against a control plane, as `keb dev` does", simCommand},
		{"migrate", "apply (up), roll back (down) or show (status) database migrations", migrateCommand},
		{"token", "print a token that a running `keb dev` accepts", tokenCommand},
		{"runtimes", "list runtimes (GET /info/runtimes) as a table or JSON (alias: rt)", runtimesCommand},
		{"orchestrations", "list orchestrations, show or watch one, list its operations, cancel or retry it (alias: o)", orchestrationsCommand},
		{"upgrade", "orchestrate a Kyma or cluster upgrade of the runtimes --target selects (`keb upgrade kyma|cluster`)", upgradeCommand},
		{"cleanup", "run one pass of the subaccount or environments cleanup (`keb cleanup subaccounts|environments [--dry-run]`)", cleanupCommand},
		{"reconcile", "repair drifted sap-btp-manager Secrets in every running runtime (`keb reconcile btp-secrets [--dry-run]`)", reconcileCommand},
		{"pool", "list the hyperscaler account pool, return an account to it (`keb pool release NAME`), count it per type and state (`keb pool summary`), or show the HAP rules (`keb pool rules [--plan P --platform-region R --region H]`)", poolCommand},
		{"events", "list the events of an instance, runtime or operation (GET /events) with each step's duration (`keb events -i INSTANCE`)", eventsCommand},
		{"kubeconfig", "print or write the kubeconfig people use for one runtime (GET /kubeconfig/{instance_id})", kubeconfigCommand},
		{"taskrun", "run a local command once per runtime --target selects, with KUBECONFIG set to its admin kubeconfig (`keb taskrun --target all -- kubectl get ns`)", taskrunCommand},
		{"login", "save the broker's URL and a token or an OAuth2 client for the operator commands (`keb login --url URL --token T`)", loginCommand},
		{"logout", "remove what keb login saved", logoutCommand},
		{"version", "print the version, commit and schema version", versionCommand},
	}
}

// subcommands are the positional words a command takes, for its usage line.
var subcommands = map[string]string{"migrate": " up|down|status",
	"orchestrations": " [list | show ID | operations ID [OPERATION_ID] | cancel ID | retry ID]", "upgrade": " kyma|cluster",
	"pool": " [summary | release NAME | rules]", "reconcile": " btp-secrets",

	"taskrun": " --target SELECTOR -- COMMAND [ARGS]"}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	buildinfo.Version = version
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || (args[0] == "help" && len(args) == 1) {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" { // as most CLIs (kubectl's `version`, git's `--version`)
		args = []string{"version"}
	}
	if args[0] == "help" && len(args) > 1 { // `keb help runtimes` is `keb runtimes --help`
		args = []string{args[1], "--help"}
	}
	if args[0] == "rt" { // upstream kcp CLI's alias
		args = append([]string{"runtimes"}, args[1:]...)
	}
	if args[0] == "o" || args[0] == "orchestration" { // upstream kcp CLI's spellings
		args = append([]string{"orchestrations"}, args[1:]...)
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		fs := flag.NewFlagSet("keb "+c.name, flag.ContinueOnError)
		runFn := c.flags(fs)
		// The flag package prints a parse error to the output, then calls
		// Usage: the error goes to stderr with a pointer to the help, and
		// the help itself, asked for, to stdout (as kubectl does).
		fs.SetOutput(stderr)
		fs.Usage = func() {}
		positional, err := parseInterspersed(fs, args[1:])
		if err != nil {
			if errors.Is(err, flag.ErrHelp) {
				commandHelp(stdout, c, fs)
				return 0
			}
			if s := suggestFlags(fs, err); len(s) > 0 {
				fmt.Fprintf(stderr, "\nDid you mean this?\n")
				for _, name := range s {
					fmt.Fprintf(stderr, "\t--%s\n", name)
				}
				fmt.Fprintln(stderr)
			}
			fmt.Fprintf(stderr, "See 'keb %s --help' for usage.\n", c.name)
			return 2
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := runFn(ctx, positional); err != nil {
			fmt.Fprintf(stderr, "keb %s: %v\n", c.name, err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "keb: unknown command %q\n", args[0])
	if s := suggest(args[0]); len(s) > 0 {
		fmt.Fprintf(stderr, "\nDid you mean this?\n")
		for _, name := range s {
			fmt.Fprintf(stderr, "\t%s\n", name)
		}
	}
	fmt.Fprintf(stderr, "\nRun 'keb --help' for the list of commands.\n")
	return 2
}

// usage lists every command with its one-line summary; each command's flags
// are on its own help page.
func usage(w io.Writer) {
	fmt.Fprintf(w, "keb (version %s): the Kyma Environment Broker, an Open Service Broker for Kyma runtimes.\n\nUsage: keb <command> [flags]\n\nCommands:\n", version)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-15s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'keb <command> --help' for a command's flags, each also read from its environment variable.\n")
}

// commandHelp is the help page of one command. Commands that read keb
// serve's settings (the operator commands: database, control plane, pool)
// list only their own flags and point at serve's page for the rest, so that
// each page says what is particular to its command.
func commandHelp(w io.Writer, c command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: keb %s%s [flags]\n\n%s.\n", c.name, subcommands[c.name], c.summary)
	shared := map[string]bool{}
	if c.name != "serve" && c.name != "dev" && c.name != "sim" {
		shared = serveFlagNames()
	}
	own := flag.NewFlagSet(c.name, flag.ContinueOnError)
	inherited := 0
	fs.VisitAll(func(f *flag.Flag) {
		if shared[f.Name] {
			inherited++
			return
		}
		own.Var(f.Value, f.Name, f.Usage)
		own.Lookup(f.Name).DefValue = f.DefValue
	})
	n := 0
	own.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintf(w, "\nFlags (each also read from its environment variable):\n")
		own.SetOutput(w)
		own.PrintDefaults()
	}
	if inherited > 0 {
		fmt.Fprintf(w, "\nIt also takes every `keb serve` setting (%d flags: database, control plane, account pool, ...), as flags or\nenvironment variables; without a database it uses the running `keb dev`'s (--dir). See 'keb serve --help'.\n", inherited)
	}
}

// serveFlagNames are the names of keb serve's settings.
func serveFlagNames() map[string]bool {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var cfg config.Config
	cfg.BindServe(config.NewBinder(fs))
	names := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	return names
}

// suggest returns the commands (and aliases) an unknown one is probably a
// typo of: a prefix either way, or at most two edits away.
func suggest(word string) []string {
	names := []string{"rt", "o", "orchestration"}
	for _, c := range commands() {
		names = append(names, c.name)
	}
	var out []string
	for _, n := range names {
		if len(n) < 3 || len(word) < 2 {
			continue // aliases of one or two letters suggest nothing useful
		}
		maxEdits := 2
		if len(n) <= 4 {
			maxEdits = 1 // two edits turn any short name into another
		}
		if strings.HasPrefix(n, word) || strings.HasPrefix(word, n) || editDistance(word, n) <= maxEdits {
			out = append(out, n)
		}
	}
	return out
}

// suggestFlags returns the flags of fs an undefined one (the flag package's
// parse error names it) is probably a typo of: at most two edits away (one for
// short names), or one name a prefix of the other.
func suggestFlags(fs *flag.FlagSet, parseErr error) []string {
	word, ok := strings.CutPrefix(parseErr.Error(), "flag provided but not defined: ")
	if !ok {
		return nil
	}
	word = strings.TrimLeft(word, "-")
	if i := strings.IndexByte(word, '='); i >= 0 {
		word = word[:i]
	}
	var out []string
	fs.VisitAll(func(f *flag.Flag) {
		maxEdits := 2
		if len(f.Name) <= 4 {
			maxEdits = 1
		}
		// A one- or two-letter flag is a prefix of too many words to suggest.
		prefix := len(word) >= 3 && len(f.Name) >= 3 && (strings.HasPrefix(f.Name, word) || strings.HasPrefix(word, f.Name))
		if prefix || editDistance(word, f.Name) <= maxEdits {
			out = append(out, f.Name)
		}
	})
	return out
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// newLogger builds the process logger from the common flags, and makes it
// the logger of controller-runtime and client-go too.
func newLogger(format, level string) (*logrus.Logger, error) {
	log, err := logging.New(os.Stderr, format, level)
	if err != nil {
		return nil, err
	}
	ctrllog.SetLogger(logging.Logr(log))
	return log, nil
}

// parseInterspersed parses flags before and after positional arguments, so
// that `keb migrate status --database-url X` works like
// `keb migrate --database-url X status`.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	// Everything after "--" is positional as it is (`keb taskrun -- kubectl
	// get ns -o name`: the command's flags are not keb's).
	var rest []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, rest = args[:i], args[i+1:]
	}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return append(positional, rest...), nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
