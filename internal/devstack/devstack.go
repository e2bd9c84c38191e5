// Package devstack is `keb dev`: the whole broker on one machine with no prior
// set-up. It starts PostgreSQL from the machine's server binaries (data kept
// under the dev directory), creates a dev signing key and client, and serves
// the broker plus a dev-only token endpoint.
package devstack

import (
	"context"
	"crypto"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sirupsen/logrus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/gardener"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/infrasim"
	"github.com/kyma-keb/keb/internal/pgserver"
	"github.com/kyma-keb/keb/internal/procguard"
	"github.com/kyma-keb/keb/internal/storage"
)

// Issuer and Audience are the claims of dev tokens; `keb dev` demands them.
const (
	Issuer   = "keb-dev"
	Audience = "keb"
)

// databaseName is the dev database inside the dev cluster.
const databaseName = "keb"

// Options configure `keb dev`.
type Options struct {
	Dir    string // dev state: pgdata, signing key, client, secret key, control-plane data
	Config config.Config
	Out    io.Writer // where the start banner goes
	// K8sBinDir holds kube-apiserver and etcd for the control plane and the
	// simulated runtimes.
	K8sBinDir string
	// RuntimeDelay is how long the simulated infrastructure manager takes to
	// create a cluster.
	RuntimeDelay time.Duration
	// RuntimeMode is infrasim's mode: dedicated (an apiserver per runtime)
	// or shared (one for all, for load tests).
	RuntimeMode infrasim.Mode
	// NoLifecycleManager leaves the simulated Lifecycle Manager out.
	NoLifecycleManager bool
	// RuntimeFaults are the failures the simulated infrastructure manager
	// injects (infrasim.ParseFaults's spec); "": none.
	RuntimeFaults string
	// NoAVS leaves the AVS stand-in out (it is also out when APP_AVS_API_ENDPOINT
	// names a real AVS); NoEDP the EDP stand-in (also out when
	// APP_EDP_ADMIN_URL names a real EDP).
	NoAVS, NoEDP bool
	// NoDirector leaves the Director stand-in out (also out when
	// APP_DIRECTOR_URL names a real Director).
	NoDirector bool
	// NoIAS leaves the IAS stand-in out (also out when APP_IAS_URL names
	// a real IAS).
	NoIAS bool
	// NoLMS leaves the LMS stand-in out (also out when APP_LMS_URL names a
	// real LMS).
	NoLMS bool
	// AccountCleanupDelay is how long a released (dirty) dev account stays
	// dirty before the simulated account cleaner hands it back to the pool
	// (infrasim.AccountCleaner); 0: never, as on a landscape without its
	// cleaner, where `keb pool release` is the way.
	AccountCleanupDelay time.Duration
}

// Run starts the dev stack and serves until ctx is done.
func Run(ctx context.Context, opts Options, log logrus.FieldLogger) error {
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return fmt.Errorf("creating dev directory: %w", err)
	}
	cfg := opts.Config
	unlock, err := lockDir(opts.Dir, net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)))
	if err != nil {
		return err
	}
	defer unlock()
	// PostgreSQL, etcd and the apiservers die with keb dev, even with a
	// SIGKILL; what an earlier, killed run left in this directory goes first.
	if err := procguard.Start(opts.Dir); err != nil {
		return err
	}
	// The port first: a taken one is found in a blink, not after PostgreSQL
	// and a control plane were started for nothing.
	ln, err := listen(cfg.Host, cfg.Port)
	if err != nil {
		return err
	}
	defer ln.Close()
	// Each stage of the start says when it is done and how long it took, so that a first run (initdb, a fresh
	// etcd) does not look hung.
	began := time.Now()
	stage := func(name string, since time.Time) {
		log.WithField("took", time.Since(since).Round(100*time.Millisecond).String()).Infof("%s (%s since keb dev started)",
			name, time.Since(began).Round(100*time.Millisecond))
	}
	binDir, err := filepath.Abs(opts.K8sBinDir)
	if err != nil {
		return err
	}
	// The control plane (etcd, kube-apiserver, keb's CRDs) takes longest to start: it starts beside
	// PostgreSQL and the migrations instead of after them.
	log.Info("starting the local control plane (kube-apiserver + etcd)")
	cpBegan := time.Now()
	cpStart := startControlPlaneInBackground(ctx, opts.Dir, binDir)
	defer func() {
		if err := cpStart.stop(); err != nil {
			log.WithError(err).Warn("stopping the control plane")
		}
	}()
	if cfg.DatabaseURL == "" {
		t0 := time.Now()
		log.Info("starting PostgreSQL (data in " + filepath.Join(opts.Dir, "pgdata") + "; the first start runs initdb)")
		srv, err := pgserver.Start(ctx, pgserver.Options{DataDir: filepath.Join(opts.Dir, "pgdata"), Log: log})
		if err != nil {
			return fmt.Errorf("starting dev PostgreSQL: %w", err)
		}
		defer func() {
			if err := srv.Stop(context.Background()); err != nil {
				log.WithError(err).Warn("stopping dev PostgreSQL")
			}
		}()
		if cfg.DatabaseURL, err = ensureDatabase(ctx, srv.URL, databaseName); err != nil {
			return err
		}
		if cfg.MigrateOnStart {
			// Now, while the control plane still starts, rather than when the broker starts after it.
			if err := migrate(ctx, cfg.DatabaseURL, log); err != nil {
				return err
			}
		}
		stage("PostgreSQL ready", t0)
	}
	if cfg.DatabaseSecretKey == "" {
		key, err := loadOrCreateSecretKey(filepath.Join(opts.Dir, "secret-key"))
		if err != nil {
			return err
		}
		cfg.DatabaseSecretKey = key
	}
	devKey, err := auth.LoadOrCreateDevKey(opts.Dir)
	if err != nil {
		return fmt.Errorf("loading dev signing key: %w", err)
	}
	devClient, err := auth.LoadOrCreateDevClient(opts.Dir)
	if err != nil {
		return fmt.Errorf("loading dev client: %w", err)
	}
	cfg.Issuer, cfg.Audience = Issuer, Audience

	kcp, err := cpStart.wait()
	if err != nil {
		return err
	}
	scheme, err := app.Scheme()
	if err != nil {
		return err
	}
	kc, err := client.New(kcp.config, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("control-plane client: %w", err)
	}
	poolKind, err := hyperscaler.ParseKind(cfg.Engine.HAP.PoolKind)
	if err != nil {
		return fmt.Errorf("APP_HAP_POOL_KIND: %w", err)
	}
	if err := seed(ctx, kc, poolKind, controlplane.Namespace, gardener.ProjectNamespace(cfg.Engine.GardenerProject)); err != nil {
		return err
	}
	stage("control plane ready, CRDs, account pool and overrides in place", cpBegan)
	t0 := time.Now()
	// The stand-ins are a process of their own, as in a landscape: keb
	// reaches them through the control plane and the URLs they report.
	sim, settings, err := startSim(ctx, opts, &cfg, kcp.kubeconfig)
	if err != nil {
		return err
	}
	defer func() {
		if err := sim.stop(); err != nil {
			log.WithError(err).Warn("stopping keb sim")
		}
	}()
	if err := settings.Apply(&cfg); err != nil {
		return err
	}
	cfg.Engine.KCPKubeconfig = kcp.kubeconfig
	stage(fmt.Sprintf("stand-ins started (keb sim, PID %d)", sim.pid()), t0)

	// Listening first: the CIS stand-in is reached on the broker's port.
	defer ln.Close()
	// POST /dev/cis/events needs a dev token with broker:write, checked as
	// keb checks its own.
	devAuth, err := auth.NewVerifier(ctx, auth.Config{PublicKeys: []crypto.PublicKey{devKey.Public()}, Issuer: Issuer,
		Audience: Audience}, log.WithField("component", "cis-stand-in"))
	if err != nil {
		return err
	}
	cisHandler, err := devCIS(&cfg, ln, devAuth.Require(auth.ScopeBrokerWrite))
	if err != nil {
		return err
	}
	a, err := app.New(ctx, cfg, log, &app.DevOptions{
		PublicKeys: []crypto.PublicKey{devKey.Public()},
		TokenIssue: auth.DevTokenHandler(devKey, devClient, Issuer, Audience),
		Mounts:     map[string]http.Handler{CISPrefix + "/": cisHandler},
	})
	if err != nil {
		return err
	}
	defer a.Close()
	removeEndpoints, err := writeEndpoints(opts.Dir, Endpoints{BrokerURL: "http://" + ln.Addr().String(),
		DatabaseURL: cfg.DatabaseURL, KCPKubeconfig: kcp.kubeconfig, CISEventsURL: cfg.Cleanup.CISEventsURL,
		CISAuthURL: cfg.Cleanup.CISAuthURL, CISClientID: cfg.Cleanup.CISClientID, CISClientSecret: cfg.Cleanup.CISClientSecret,
		CISVersion: cfg.Cleanup.CISVersion, AVSAPIEndpoint: cfg.AVS.APIEndpoint, EDPAdminURL: cfg.EDP.AdminURL, DirectorURL: cfg.Director.URL,
		IASURL: cfg.IAS.URL, IASUser: cfg.IAS.UserID, IASPassword: cfg.IAS.UserSecret, LMSURL: cfg.LMS.URL, LMSToken: cfg.LMS.Token, SimPID: sim.pid()})
	if err != nil {
		return err
	}
	defer removeEndpoints()
	printBanner(opts.Out, "http://"+ln.Addr().String(), devClient, cfg.DatabaseURL, kcp.kubeconfig)
	go reportReady(ctx, "http://"+ln.Addr().String()+"/readyz", func() {
		log.Infof("broker ready in %s: %s", time.Since(began).Round(100*time.Millisecond), "http://"+ln.Addr().String())
	})
	return a.Serve(ctx, ln)
}

// reportReady calls ready once url (the broker's /readyz) first answers 200, looking every 200 ms until ctx ends.
func reportReady(ctx context.Context, url string, ready func()) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				ready()
				return
			}
		}
	}
}

// listen takes the broker's port, or says how to choose another.
func listen(host string, port int) (net.Listener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
	if err != nil {
		return nil, fmt.Errorf("port %d on %s is not free (%w): choose another with --port or APP_PORT, e.g. `APP_PORT=%d make run`",
			port, host, err, port+1)
	}
	return ln, nil
}

// migrate brings the dev database to the newest schema (the broker's start then finds nothing to do).
func migrate(ctx context.Context, databaseURL string, log logrus.FieldLogger) error {
	pool, err := storage.Open(ctx, databaseURL, 2)
	if err != nil {
		return fmt.Errorf("connecting to dev PostgreSQL for its migrations: %w", err)
	}
	defer pool.Close()
	applied, err := storage.MigrateUp(ctx, pool)
	if err != nil {
		return fmt.Errorf("migrating the dev database: %w", err)
	}
	if len(applied) > 0 {
		log.WithField("versions", applied).Info("applied database migrations")
	}
	return nil
}

// ensureDatabase creates the dev database if it is missing and returns its URL.
func ensureDatabase(ctx context.Context, adminURL, name string) (string, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", fmt.Errorf("connecting to dev PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", fmt.Errorf("looking up dev database: %w", err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return "", fmt.Errorf("creating dev database: %w", err)
		}
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", fmt.Errorf("parsing dev PostgreSQL URL: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// loadOrCreateSecretKey keeps the dev AES key in a file so that credentials
// sealed in one run still open in the next.
func loadOrCreateSecretKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("reading dev secret key: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generating dev secret key: %w", err)
	}
	key := base64.StdEncoding.EncodeToString(raw)
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("writing dev secret key: %w", err)
	}
	return key, nil
}

func printBanner(out io.Writer, baseURL string, client auth.DevClient, dbURL, kubeconfig string) {
	fmt.Fprintf(out, `
keb dev is serving the broker at %[1]s
  database:        %[4]s
  control plane:   bin/k8s/kubectl --kubeconfig %[5]s get runtimes,kymas -A
  dev OAuth2 client (dev only): client_id=%[2]s client_secret=%[3]s
  get a token:     curl -s -X POST %[1]s/oauth2/token -u '%[2]s:%[3]s' -F grant_type=client_credentials -F 'scope=broker:write cld:read'
             or:   bin/keb token --scope "broker:write cld:read"
  catalog:         curl -s %[1]s/oauth/v2/catalog -H 'X-Broker-API-Version: 2.17' -H "Authorization: Bearer $TOKEN"

`, baseURL, client.ID, client.Secret, dbURL, kubeconfig)
}
