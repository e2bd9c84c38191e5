package pgtest

import (
	"context"
	"fmt"

	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
)

// dockerImage is used only when neither KEB_TEST_DATABASE_URL nor local
// binaries are available.
const dockerImage = "postgres:16-alpine"

// dockerServer runs PostgreSQL in a container. testcontainers stays confined
// to this file: it is the last resort and a heavy dependency.
func dockerServer(ctx context.Context) (srv *server, err error) {
	// testcontainers panics (MustExtractDockerHost) rather than returning an
	// error when it finds no Docker host at all.
	defer func() {
		if r := recover(); r != nil {
			srv, err = nil, fmt.Errorf("no Docker engine found: %v", r)
		}
	}()
	// Check health first: without it, Run would spend its whole timeout
	// retrying against a daemon that is not there.
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		return nil, fmt.Errorf("no Docker engine found: %w", err)
	}
	if err := provider.Health(ctx); err != nil {
		return nil, fmt.Errorf("Docker engine not reachable: %w", err)
	}

	c, err := tcpostgres.Run(ctx, dockerImage,
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.WithUsername("keb"),
		tcpostgres.WithPassword("keb"),
		// The module already sets fsync=off; the rest matches pgserver's
		// throwaway clusters.
		testcontainers.WithCmdArgs("-c", "max_connections=200", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"),
		tcpostgres.BasicWaitStrategies(),
	)
	if err != nil {
		_ = testcontainers.TerminateContainer(c)
		return nil, fmt.Errorf("starting %s container: %w", dockerImage, err)
	}
	url, err := c.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		_ = testcontainers.TerminateContainer(c)
		return nil, fmt.Errorf("reading container connection string: %w", err)
	}
	return &server{
		url:        url,
		source:     "PostgreSQL container " + dockerImage,
		disposable: true,
		stop:       func(context.Context) error { return testcontainers.TerminateContainer(c) },
	}, nil
}
