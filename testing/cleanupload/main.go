// Command cleanupload measures one pass of the subaccount cleanup: -events
// SUBACCOUNT_DELETE events over -pages pages of an in-process CIS stand-in
// (served over loopback HTTP), against a database loaded by
// testing/runtimesload (instances rtload-inst-N of subaccounts rtload-sa-N).
// It prints the pass's time, its lookups' statements and time per chunk, and
// the time of a second pass that finds nothing new.
//
//	go run ./testing/runtimesload -load 100000 -database-url "$DB"
//	go run ./testing/cleanupload -database-url "$DB" -events 10000 -pages 100
//
// The pass starts real deprovisionings (queued River jobs): use a database
// made for the measurement and drop it afterwards.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/cis"
	"github.com/kyma-keb/keb/internal/cleanup"
	"github.com/kyma-keb/keb/internal/devstack/cisstub"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// timedStore times and counts the statements of each instance lookup.
type timedStore struct {
	*storage.Store
	counter    *pgtest.StatementCounter
	statements []int64
	took       []time.Duration
}

func (s *timedStore) InstancesOfSubaccounts(ctx context.Context, ids []string) ([]storage.CleanupInstance, error) {
	before, start := s.counter.Count(), time.Now()
	out, err := s.Store.InstancesOfSubaccounts(ctx, ids)
	s.took = append(s.took, time.Since(start))
	s.statements = append(s.statements, s.counter.Count()-before)
	return out, err
}

func main() {
	dbURL := flag.String("database-url", os.Getenv("APP_DATABASE_URL"), "keb database loaded by testing/runtimesload")
	events := flag.Int("events", 10000, "SUBACCOUNT_DELETE events")
	pages := flag.Int("pages", 100, "pages the events come in")
	every := flag.Int("every", 10, "an event for every this many loaded subaccounts (rtload-sa-N, N = 0, every, 2*every...)")
	chunk := flag.Int("chunk", cleanup.DefaultChunk, "events per instance lookup")
	flag.Parse()
	if err := run(*dbURL, *events, *pages, *every, *chunk); err != nil {
		fmt.Fprintln(os.Stderr, "cleanupload:", err)
		os.Exit(1)
	}
}

func run(dbURL string, events, pages, every, chunk int) error {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	counter := &pgtest.StatementCounter{}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	log := logrus.New()
	log.SetOutput(io.Discard)
	queue, err := process.NewQueue(pool, process.QueueConfig{}, log)
	if err != nil {
		return err
	}
	store := &timedStore{Store: storage.NewStore(pool, nil, queue), counter: counter}

	stub := cisstub.New("id", "secret")
	srv := httptest.NewServer(stub.Handler(nil))
	defer srv.Close()
	at := time.Now().Add(-time.Hour)
	for i := range events {
		stub.AddAt(fmt.Sprintf("rtload-sa-%07d", i*every), at.Add(time.Duration(i)*time.Millisecond))
	}
	client, err := cis.New(cis.Config{Version: cis.V2, EventsURL: srv.URL + cisstub.EventsV2Path,
		AuthURL: srv.URL + cisstub.TokenPath, ClientID: "id", ClientSecret: "secret", PageSize: (events + pages - 1) / pages})
	if err != nil {
		return err
	}
	c := cleanup.NewSubaccountCleaner(client, store, 24*time.Hour, log)
	c.Chunk = chunk

	start, before := time.Now(), counter.Count()
	rep, err := c.Run(ctx, false)
	if err != nil {
		return err
	}
	took, stmts := time.Since(start), counter.Count()-before
	fmt.Printf("pass 1: %d events on %d pages (%d requests), %d instances found, %d triggered, %d already going: %s, %d statements\n",
		rep.Events, pages, stub.Requests(), rep.Instances, rep.Triggered, rep.AlreadyGoing, took.Round(time.Millisecond), stmts)
	var lookup time.Duration
	for _, d := range store.took {
		lookup += d
	}
	sorted := slices.Clone(store.took)
	slices.Sort(sorted)
	fmt.Printf("lookups: %d chunks of %d events, statements per chunk %v, lookup time total %s, median %s, max %s\n",
		len(store.took), chunk, slices.Compact(slices.Clone(store.statements)), lookup.Round(time.Millisecond),
		sorted[len(sorted)/2].Round(time.Microsecond), sorted[len(sorted)-1].Round(time.Microsecond))

	start, before = time.Now(), counter.Count()
	rep, err = c.Run(ctx, false)
	if err != nil {
		return err
	}
	fmt.Printf("pass 2 (nothing new): %d events, %d triggered: %s, %d statements\n",
		rep.Events, rep.Triggered, time.Since(start).Round(time.Millisecond), counter.Count()-before)
	return nil
}
