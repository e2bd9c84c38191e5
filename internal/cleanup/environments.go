package cleanup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/broker"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/storage"
)

// EnvironmentsJob names the environments cleanup's periodic job: never
// rename it.
const EnvironmentsJob = "environments_cleanup"

// EnvironmentsConfig says which runtimes may go.
type EnvironmentsConfig struct {
	// Namespace holds the Runtime CRs (the control namespace).
	Namespace string
	// MaxAge: younger runtimes stay.
	MaxAge time.Duration
	// Selector picks the runtimes that may be cleaned up: one not matching
	// it stays (the default, owner.do-not-delete!=true, keeps every runtime
	// labelled owner.do-not-delete=true).
	Selector labels.Selector
	// MaxPerRun: a pass that would act on more runtimes acts on none.
	MaxPerRun int
	// Now is the clock ages are measured with; nil is time.Now.
	Now func() time.Time
}

// environmentsStore is the part of storage.Store the environments cleanup
// uses.
type environmentsStore interface {
	broker.DeprovisioningStore
	InstancesOfRuntimes(ctx context.Context, runtimeIDs, instanceIDs []string) ([]storage.CleanupInstance, error)
}

// EnvironmentsCleaner removes runtimes older than the maximum age.
type EnvironmentsCleaner struct {
	kcp              client.Client
	store            environmentsStore
	cfg              EnvironmentsConfig
	operationTimeout time.Duration
	log              logrus.FieldLogger
	now              func() time.Time
}

// NewEnvironmentsCleaner returns a cleaner of the Runtime CRs in kcp.
func NewEnvironmentsCleaner(kcp client.Client, store environmentsStore, cfg EnvironmentsConfig, operationTimeout time.Duration, log logrus.FieldLogger) *EnvironmentsCleaner {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &EnvironmentsCleaner{kcp: kcp, store: store, cfg: cfg, operationTimeout: operationTimeout, log: log, now: now}
}

// Action is what a pass does with a runtime.
type Action string

// Actions on a runtime.
const (
	// ActionDeprovision: its instance is deprovisioned the normal way.
	ActionDeprovision Action = "deprovision"
	// ActionDeleteOrphan: no instance has it; its Runtime and Kyma CRs and
	// kubeconfig Secret are deleted directly.
	ActionDeleteOrphan Action = "delete orphan"
	ActionKeep         Action = "keep"
)

// Decision is what a pass decided for one Runtime CR, and why.
type Decision struct {
	RuntimeID  string
	Name       string
	InstanceID string
	Age        time.Duration
	Action     Action
	Reason     string
	// OperationID is the deprovisioning started (not in a dry run).
	OperationID string
}

// EnvironmentsReport is a pass's decisions.
type EnvironmentsReport struct {
	DryRun    bool
	Decisions []Decision
	// Refused says why the pass acted on nothing although it had runtimes
	// to act on (the max-per-run guard).
	Refused string
	// Acted is how many runtimes the pass deprovisioned or deleted.
	Acted int
}

// ToAct returns the decisions that act on a runtime.
func (r EnvironmentsReport) ToAct() []Decision {
	var out []Decision
	for _, d := range r.Decisions {
		if d.Action != ActionKeep {
			out = append(out, d)
		}
	}
	return out
}

// Run makes one pass: decides for every Runtime CR, logs each decision with
// its reason, and unless dryRun or the guard refuses, acts. A dry run
// decides exactly as the real run does.
func (c *EnvironmentsCleaner) Run(ctx context.Context, dryRun bool) (EnvironmentsReport, error) {
	rep, err := c.plan(ctx)
	if err != nil {
		return rep, err
	}
	rep.DryRun = dryRun
	act := rep.ToAct()
	if len(act) > c.cfg.MaxPerRun {
		rep.Refused = fmt.Sprintf("%d runtimes to clean up exceed the maximum of %d per run (APP_ENVIRONMENTS_CLEANUP_MAX_PER_RUN); "+
			"acting on none: check APP_LABEL_SELECTOR and APP_MAX_AGE_HOURS, or raise the maximum", len(act), c.cfg.MaxPerRun)
	}
	for _, d := range rep.Decisions {
		c.logDecision(d, dryRun || rep.Refused != "")
	}
	if rep.Refused != "" {
		c.log.WithField("to_act", len(act)).Warn("environments cleanup refused: " + rep.Refused)
		return rep, nil
	}
	if dryRun {
		c.log.Infof("environments cleanup (dry run): %d runtimes would be cleaned up, %d kept", len(act), len(rep.Decisions)-len(act))
		return rep, nil
	}
	var errs []error
	for i := range rep.Decisions {
		d := &rep.Decisions[i]
		var err error
		switch d.Action {
		case ActionDeprovision:
			err = c.deprovision(ctx, d)
		case ActionDeleteOrphan:
			err = c.deleteOrphan(ctx, d)
		default:
			continue
		}
		if err != nil {
			errs = append(errs, err)
			c.log.WithError(err).WithField("runtime_id", d.RuntimeID).Error("cleaning up runtime")
			continue
		}
		rep.Acted++
	}
	c.log.Infof("environments cleanup: %d runtimes cleaned up, %d kept, %d failed", rep.Acted, len(rep.Decisions)-len(act), len(errs))
	return rep, errors.Join(errs...)
}

// plan decides for every Runtime CR in the namespace.
func (c *EnvironmentsCleaner) plan(ctx context.Context) (EnvironmentsReport, error) {
	var list infrastructuremanager.RuntimeList
	if err := c.kcp.List(ctx, &list, client.InNamespace(c.cfg.Namespace)); err != nil {
		return EnvironmentsReport{}, fmt.Errorf("listing Runtime CRs: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	now := c.now()
	var rep EnvironmentsReport
	var candidates []*Decision
	for i := range list.Items {
		rt := &list.Items[i]
		d := Decision{RuntimeID: rt.RuntimeID(), Name: rt.Name, InstanceID: rt.Labels[controlplane.LabelInstanceID],
			Age: now.Sub(rt.CreationTimestamp.Time).Truncate(time.Second), Action: ActionKeep}
		switch {
		case rt.DeletionTimestamp != nil:
			d.Reason = "already being deleted"
		case !c.cfg.Selector.Matches(labels.Set(rt.Labels)):
			d.Reason = fmt.Sprintf("labels do not match the selector %q", c.cfg.Selector.String())
		case d.Age <= c.cfg.MaxAge:
			d.Reason = fmt.Sprintf("younger than the maximum age %s", c.cfg.MaxAge)
		}
		rep.Decisions = append(rep.Decisions, d)
	}
	for i := range rep.Decisions {
		if rep.Decisions[i].Reason == "" {
			candidates = append(candidates, &rep.Decisions[i])
		}
	}
	if len(candidates) == 0 {
		return rep, nil
	}
	var runtimeIDs, instanceIDs []string
	for _, d := range candidates {
		runtimeIDs = append(runtimeIDs, d.RuntimeID)
		if d.InstanceID != "" {
			instanceIDs = append(instanceIDs, d.InstanceID)
		}
	}
	instances, err := c.store.InstancesOfRuntimes(ctx, runtimeIDs, instanceIDs)
	if err != nil {
		return rep, err
	}
	byRuntime, byInstance := map[string]storage.CleanupInstance{}, map[string]storage.CleanupInstance{}
	for _, inst := range instances {
		if inst.RuntimeID != "" {
			byRuntime[inst.RuntimeID] = inst
		}
		byInstance[inst.InstanceID] = inst
	}
	for _, d := range candidates {
		inst, ok := byRuntime[d.RuntimeID]
		if !ok {
			inst, ok = byInstance[d.InstanceID]
		}
		switch {
		case !ok:
			d.Action = ActionDeleteOrphan
			d.Reason = fmt.Sprintf("older than %s and no instance has it", c.cfg.MaxAge)
		case inst.Running != "":
			d.InstanceID = inst.InstanceID
			d.Reason = fmt.Sprintf("%s operation %s of instance %s in progress", inst.Running, inst.RunningID, inst.InstanceID)
		default:
			d.InstanceID = inst.InstanceID
			d.Action = ActionDeprovision
			d.Reason = fmt.Sprintf("older than %s", c.cfg.MaxAge)
		}
	}
	return rep, nil
}

func (c *EnvironmentsCleaner) logDecision(d Decision, dry bool) {
	log := c.log.WithFields(logrus.Fields{"runtime_id": d.RuntimeID, "instance_id": d.InstanceID, "age": d.Age.String(),
		"action": string(d.Action), "reason": d.Reason})
	if dry && d.Action != ActionKeep {
		log.Info("environments cleanup would act (not acting)")
		return
	}
	log.Info("environments cleanup decision")
}

// deprovision starts the instance's deprovisioning the way DELETE does.
func (c *EnvironmentsCleaner) deprovision(ctx context.Context, d *Decision) error {
	op, _, err := broker.StartDeprovisioning(ctx, c.store, d.InstanceID, c.now().Add(c.operationTimeout))
	if err != nil {
		return fmt.Errorf("deprovisioning instance %s of runtime %s: %w", d.InstanceID, d.RuntimeID, err)
	}
	d.OperationID = op.ID
	c.log.WithFields(logrus.Fields{"runtime_id": d.RuntimeID, "instance_id": d.InstanceID, "operation_id": op.ID}).
		Infof("deprovisioning for instance %s (runtime %s) was triggered, operation: %s", d.InstanceID, d.RuntimeID, op.ID)
	return nil
}

// deleteOrphan deletes a runtime no instance has: its Runtime CR, Kyma CR
// and kubeconfig Secret. What is already gone is not an error.
func (c *EnvironmentsCleaner) deleteOrphan(ctx context.Context, d *Decision) error {
	rt := &infrastructuremanager.Runtime{}
	rt.Name, rt.Namespace = d.Name, c.cfg.Namespace
	k := &kyma.Kyma{}
	k.Name, k.Namespace = kyma.Name(d.RuntimeID), c.cfg.Namespace
	sec := &corev1.Secret{}
	sec.Name, sec.Namespace = infrastructuremanager.KubeconfigSecretName(d.RuntimeID), c.cfg.Namespace
	for _, obj := range []client.Object{k, rt, sec} {
		if err := c.kcp.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %T %s of orphaned runtime %s: %w", obj, obj.GetName(), d.RuntimeID, err)
		}
	}
	c.log.WithField("runtime_id", d.RuntimeID).Infof("orphaned runtime %s deleted: Runtime and Kyma CRs and kubeconfig Secret", d.RuntimeID)
	return nil
}
