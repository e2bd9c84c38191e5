package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/maintenance"
	"github.com/kyma-keb/keb/internal/orchestration"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// OrchestrationResult is one Kyma upgrade orchestration's scheduler passes.
type OrchestrationResult struct {
	DryRun  bool `json:"dryRun"`
	Targets int  `json:"targets"`
	Workers int  `json:"workers"`
	// First is the pass that freezes the targets (and, for a real run,
	// starts the first upgrades).
	FirstMs         float64 `json:"firstms"`
	FirstStatements int64   `json:"firstStatements"`
	// Later passes each record Workers finished upgrades and start as many.
	LaterPasses     int     `json:"laterPasses"`
	LaterMedianMs   float64 `json:"laterMedianms"`
	LaterStatements int64   `json:"laterStatements"`
	Description     string  `json:"description"`
}

// orchestrationAccounts selects the runtimes of this many of runtimesload's
// 500 global accounts: 10,000 runtimes at 100,000 instances.
const orchestrationAccounts = 50

// runOrchestration creates a Kyma upgrade over the runtimes of
// orchestrationAccounts global accounts with 50 workers and runs the
// scheduler's passes as its queue job would (Scheduler.Advance), without
// upgrade workers: between passes the running upgrades are marked succeeded
// in the database, as finished upgrades would be.
func runOrchestration(ctx context.Context, pool *pgxpool.Pool, queue *process.Queue, cnt *counter, dry bool) (*OrchestrationResult, error) {
	const workers = 50
	log := logrus.New()
	log.SetOutput(io.Discard)
	store := storage.NewOrchestrations(pool, queue)
	sched := orchestration.NewScheduler(store, maintenance.DefaultConfig, log)
	var sels []string
	for i := range orchestrationAccounts {
		sels = append(sels, fmt.Sprintf(`{"globalAccount": "%sga-%03d"}`, idPrefix, i))
	}
	body := fmt.Sprintf(`{"targets": {"include": [%s]}, "strategy": {"parallel": {"workers": %d}}, "dryRun": %t}`,
		strings.Join(sels, ", "), workers, dry)
	p, err := orchestration.ParseRequest([]byte(body), storage.OperationTypeUpgradeKyma, orchestration.Defaults{KymaVersion: "2.30.0"})
	if err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(p)
	id := fmt.Sprintf("scaledb-%d", time.Now().UnixNano())
	if err := store.Create(ctx, storage.Orchestration{ID: id, Type: storage.OperationTypeUpgradeKyma, Parameters: raw}); err != nil {
		return nil, err
	}
	res := &OrchestrationResult{DryRun: dry, Workers: workers}
	pass := func() (time.Duration, int64, error) {
		before := cnt.n.Load()
		t0 := time.Now()
		_, err := sched.Advance(ctx, id)
		return time.Since(t0), cnt.n.Load() - before, err
	}
	d, s, err := pass()
	if err != nil {
		return nil, fmt.Errorf("first pass: %w", err)
	}
	res.FirstMs, res.FirstStatements = ms(d), s
	var later []time.Duration
	for range 5 {
		tag, err := pool.Exec(ctx, `UPDATE operations SET state = 'succeeded', finished_at = now()
			WHERE orchestration_id = $1 AND state = 'in progress'`, id)
		if err != nil {
			return nil, err
		}
		if tag.RowsAffected() == 0 {
			break
		}
		d, s, err := pass()
		if err != nil {
			return nil, fmt.Errorf("pass: %w", err)
		}
		later = append(later, d)
		if res.LaterStatements == 0 || s < res.LaterStatements {
			res.LaterStatements = s
		}
	}
	if len(later) > 0 {
		res.LaterPasses = len(later)
		res.LaterMedianMs = ms(median(later))
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM orchestration_operations WHERE orchestration_id = $1`, id).
		Scan(&res.Targets); err != nil {
		return nil, err
	}
	o, err := store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	res.Description = string(o.State) + ": " + o.Description
	// Orchestrations of a type run one at a time: end this one for the
	// next (its remaining targets are never started).
	if _, err := pool.Exec(ctx, `UPDATE orchestrations SET state = 'canceled' WHERE orchestration_id = $1`, id); err != nil {
		return nil, err
	}
	return res, nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
