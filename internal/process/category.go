package process

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kyma-keb/keb/internal/storage"
)

// Category names the component an operation failed in: the dependency an
// operator pages about. The values are upstream KEB's error_category label
// of kcp_keb_v2_operation_result, so its alerts keep working.
type Category string

// Error categories.
const (
	CategoryKEB                   Category = "keb"
	CategoryAccountPool           Category = "account-pool"
	CategoryInfrastructureManager Category = "infrastructure-manager"
	CategoryLifecycleManager      Category = "lifecycle-manager"
	CategoryBTPManager            Category = "btp-manager"
	CategoryDB                    Category = "db - keb"
	CategoryK8sClient             Category = "k8s client - keb"
	// CategoryAVS is SAP's Availability Service (internal/avs).
	CategoryAVS Category = "avs"
	// CategoryEDP is the Event Data Platform (internal/edp).
	CategoryEDP Category = "edp"
	// CategoryDirector is Compass's Director (internal/director).
	CategoryDirector Category = "director"
	// CategoryIAS is SAP Cloud Identity Services (internal/ias).
	CategoryIAS Category = "ias"
	// CategoryLMS is the Log Management Service (internal/lms).
	CategoryLMS Category = "lms"
)

// Error reasons: short codes of why an operation failed or a step was
// skipped, upstream's where upstream has one.
const (
	ReasonTimeout     = "err_keb_timeout"
	ReasonInternal    = "err_keb_internal"
	ReasonDB          = "err_db_unavailable"
	ReasonDBInternal  = "err_db_internal"
	ReasonK8sClient   = "err_k8s_unreachable"
	ReasonStepFailed  = "err_step_failed"
	ReasonStepErrored = "err_step_error"
)

// stepComponents maps every step of every pipeline to the component its
// work depends on. A step's name is unique across pipelines, except
// initialization, which both provisioning and deprovisioning have and which
// reads keb's own records in both. TestEveryStepHasAComponent holds every
// pipeline to this table.
var stepComponents = map[string]Category{
	// provisioning
	"initialization":             CategoryKEB,
	"resolve_hyperscaler_secret": CategoryAccountPool,
	"overrides":                  CategoryKEB,
	"components":                 CategoryKEB,
	"create_runtime":             CategoryInfrastructureManager,
	"check_runtime":              CategoryInfrastructureManager,
	"apply_kyma":                 CategoryLifecycleManager,
	"inject_btp_manager":         CategoryBTPManager,
	"check_kyma":                 CategoryLifecycleManager,
	"avs_internal_evaluation":    CategoryAVS,
	"avs_external_evaluation":    CategoryAVS,
	"edp_registration":           CategoryEDP,
	"check_dashboard_url":        CategoryDirector,
	"ias_registration":           CategoryIAS,
	"ias_type":                   CategoryIAS,
	"lms_tenant":                 CategoryLMS,
	"lms_certificates":           CategoryLMS,
	// update
	"update_initialization":          CategoryKEB,
	"update_hyperscaler_account":     CategoryAccountPool,
	"update_runtime":                 CategoryInfrastructureManager,
	"check_runtime_update":           CategoryInfrastructureManager,
	"update_kyma":                    CategoryLifecycleManager,
	"update_btp_manager_credentials": CategoryBTPManager,
	"relabel_global_account":         CategoryK8sClient,
	"edp_update":                     CategoryEDP,
	// upgrades
	"upgrade_initialisation": CategoryKEB,
	"upgrade_overrides":      CategoryKEB,
	"upgrade_kyma":           CategoryLifecycleManager,
	"upgrade_cluster":        CategoryInfrastructureManager,
	"await_upgrade":          CategoryInfrastructureManager,
	"avs_maintenance_start":  CategoryAVS,
	"avs_maintenance_end":    CategoryAVS,
	// deprovisioning
	"remove_bindings":            CategoryKEB,
	"soft_delete_btp_services":   CategoryBTPManager,
	"delete_kyma":                CategoryLifecycleManager,
	"delete_runtime":             CategoryInfrastructureManager,
	"release_hyperscaler_secret": CategoryAccountPool,
	"archive":                    CategoryDB,
	"remove_avs_evaluations":     CategoryAVS,
	"edp_deregistration":         CategoryEDP,
	"ias_deregistration":         CategoryIAS,
}

// StepComponent is the component a step depends on; keb for a step the
// table does not know.
func StepComponent(step string) (Category, bool) {
	c, ok := stepComponents[step]
	if !ok {
		return CategoryKEB, false
	}
	return c, true
}

// classify names the component and the reason of a step's trouble: an
// error that says the database or the control plane could not be reached
// is theirs whatever the step, anything else the step's component's.
func classify(step Step, err error, fallback string) (Category, string) {
	switch {
	case fromDatabase(err) && storage.Unavailable(err):
		return CategoryDB, ReasonDB
	case fromDatabase(err):
		return CategoryDB, ReasonDBInternal
	case err != nil && unreachable(err) && !isRemote(step):
		return CategoryK8sClient, ReasonK8sClient
	}
	c, _ := StepComponent(step.Name())
	return c, fallback
}

// fromDatabase reports whether err came from PostgreSQL or the way to it
// (storage.Unavailable alone would also take a control plane's connection
// errors for the database's).
func fromDatabase(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	var connectErr *pgconn.ConnectError
	return errors.As(err, &pgErr) || errors.As(err, &connectErr) || pgconn.Timeout(err)
}

func isRemote(step Step) bool {
	_, ok := step.(RemoteStep)
	return ok
}

// errPanicked marks a failure that was a step's panic: keb's own bug.
var errPanicked = errors.New("step panicked")
