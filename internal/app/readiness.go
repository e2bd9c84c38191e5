package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/httpapi"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/storage"
)

// probes are the readiness checks, run in the background (httpapi.Readiness).
// The database and its schema are required: without them the replica can
// answer nothing. The control plane, its watch and the workers are reported;
// a control plane that is down does not take the broker off the network
// (requests are accepted and polls answered from the database), but one
// lacking keb's CRDs is a deployment error no operation can get past, so it
// is required.
func (a *App) probes() []httpapi.Probe {
	probes := []httpapi.Probe{{Name: "database", Check: a.checkDatabase}}
	if a.engine != nil {
		probes = append(probes,
			httpapi.Probe{Name: "control plane", Check: a.engine.checkControlPlane},
			httpapi.Probe{Name: "workers", Check: a.engine.checkWorkers})
	}
	return probes
}

// checkDatabase reports the database and the schema. "Cannot check" (the
// database did not answer) is told apart from "behind" (run migrations).
// Errors are logged in full; the answer names no host, port, user or
// database.
func (a *App) checkDatabase(ctx context.Context) []httpapi.Check {
	db := httpapi.Check{Name: "database", Required: true}
	schema := httpapi.Check{Name: "schema", Required: true}
	st, err := storage.Migrations(ctx, a.pool)
	switch {
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		// keb is stopping: no news about the database, nothing to warn of
		// (a deadline that passed is the database not answering, below).
		db.Detail = "not checked: keb is stopping"
		schema.Detail = db.Detail
		return []httpapi.Check{db, schema}
	case err != nil:
		a.log.WithError(err).Warn("readiness: reading the schema version")
		db.Detail = "the database did not answer"
		if !storage.Unavailable(err) {
			db.Detail = "the schema version could not be read (see the log)"
		}
		schema.Detail = "cannot check: " + db.Detail
		return []httpapi.Check{db, schema}
	case st.QueueBehind:
		db.OK = true
		schema.Detail = "the work queue's tables are not migrated: run `keb migrate up`"
	case st.Current < st.Head:
		db.OK = true
		schema.Detail = fmt.Sprintf("schema at version %d, this keb needs %d: run `keb migrate up`", st.Current, st.Head)
	case st.Current > st.Head:
		db.OK, schema.OK = true, true
		schema.Detail = fmt.Sprintf("schema at version %d, newer than this keb's %d (a newer keb migrated it)", st.Current, st.Head)
	default:
		db.OK, schema.OK = true, true
		schema.Detail = fmt.Sprintf("version %d", st.Current)
	}
	return []httpapi.Check{db, schema}
}

// checkControlPlane lists one object of each CRD keb writes: it tells an
// unreachable control plane from one lacking keb's CRDs. It also reports
// the control-plane watch.
func (e *engine) checkControlPlane(ctx context.Context) []httpapi.Check {
	cp := httpapi.Check{Name: "control plane", OK: true, Detail: "reachable"}
	crds := httpapi.Check{Name: "control plane CRDs", Required: true, OK: true, Detail: "Runtime and Kyma served"}
	for _, k := range []struct {
		kind string
		list client.ObjectList
	}{{"Runtime", &infrastructuremanager.RuntimeList{}}, {"Kyma", &kyma.KymaList{}}} {
		err := e.kcp.List(ctx, k.list, client.InNamespace(e.namespace), client.Limit(1))
		switch {
		case err == nil:
		case meta.IsNoMatchError(err):
			crds.OK = false
			crds.Detail = fmt.Sprintf("the control plane does not serve the %s kind: install keb's CRDs (resources/crds)", k.kind)
		case errors.Is(ctx.Err(), context.Canceled):
			// keb is stopping (as in checkDatabase): no news about the
			// control plane, nothing to warn of.
			cp.OK, cp.Detail = false, "not checked: keb is stopping"
			crds.OK, crds.Required, crds.Detail = false, false, cp.Detail
			return []httpapi.Check{cp, crds, e.checkWatch()}
		default:
			e.log.WithError(err).Warn("readiness: reaching the control plane")
			cp.OK, cp.Detail = false, "unreachable: operations wait and retry until it is back (see the log)"
			crds.OK, crds.Required, crds.Detail = false, false, "cannot check: the control plane is unreachable"
			return []httpapi.Check{cp, crds, e.checkWatch()}
		}
	}
	return []httpapi.Check{cp, crds, e.checkWatch()}
}

func (e *engine) checkWatch() httpapi.Check {
	st := e.watcher.State()
	c := httpapi.Check{Name: "control plane watch", OK: st.Running}
	switch {
	case st.Running:
		c.Detail = "running since " + st.Since.UTC().Format(time.RFC3339)
	case st.Restarts > 0:
		c.Detail = fmt.Sprintf("not running since %s, restarting with backoff (%d restarts; see the log); operations poll meanwhile",
			st.Since.UTC().Format(time.RFC3339), st.Restarts)
	default:
		c.Detail = "starting"
	}
	return c
}

func (e *engine) checkWorkers(context.Context) []httpapi.Check {
	c := httpapi.Check{Name: "workers", OK: true}
	if e.stopping.Load() {
		c.OK, c.Detail = false, "stopping: running steps finish, no new work is taken"
		return []httpapi.Check{c}
	}
	c.Detail = fmt.Sprintf("%d workers; a killed replica's operations are taken over within %s", e.workers, e.takeover.Within())
	return []httpapi.Check{c}
}
