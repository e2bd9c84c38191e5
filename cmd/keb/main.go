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
	"syscall"

	"github.com/sirupsen/logrus"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

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
		{"migrate", "apply (up), roll back (down) or show (status) database migrations", migrateCommand},
		{"token", "print a token that a running `keb dev` accepts", tokenCommand},
		{"runtimes", "list runtimes (GET /info/runtimes) as a table or JSON (alias: rt)", runtimesCommand},
		{"orchestrations", "list orchestrations, show or watch one, list its operations, cancel or retry it (alias: o)", orchestrationsCommand},
		{"upgrade", "orchestrate a Kyma or cluster upgrade of the runtimes --target selects (`keb upgrade kyma|cluster`)", upgradeCommand},
		{"cleanup", "run one pass of the subaccount or environments cleanup (`keb cleanup subaccounts|environments [--dry-run]`)", cleanupCommand},
		{"pool", "list the hyperscaler account pool, return an account to it (`keb pool release NAME`), or show the HAP rules (`keb pool rules [--plan P --platform-region R --region H]`)", poolCommand},
		{"version", "print the version", versionCommand},
	}
}

// subcommands are the positional words a command takes, for its usage line.
var subcommands = map[string]string{"migrate": " up|down|status",
	"orchestrations": " [list | show ID | operations ID [OPERATION_ID] | cancel ID | retry ID]", "upgrade": " kyma|cluster"}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
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
		fs.SetOutput(stderr)
		runFn := c.flags(fs)
		fs.Usage = func() {
			fmt.Fprintf(fs.Output(), "Usage: keb %s%s [flags]\n\n%s.\n\nFlags (each also read from its environment variable):\n", c.name, subcommands[c.name], c.summary)
			fs.PrintDefaults()
		}
		positional, err := parseInterspersed(fs, args[1:])
		if err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
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
	fmt.Fprintf(stderr, "keb: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

// usage lists every command with every flag and its environment variable.
func usage(w io.Writer) {
	fmt.Fprintf(w, "keb (version %s): the Kyma Environment Broker, an Open Service Broker for Kyma runtimes.\n\nUsage: keb <command> [flags]\n\nCommands:\n", version)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	for _, c := range commands() {
		fs := flag.NewFlagSet("keb "+c.name, flag.ContinueOnError)
		c.flags(fs)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n == 0 {
			continue
		}
		fmt.Fprintf(w, "\nFlags of `keb %s`:\n", c.name)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
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
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
