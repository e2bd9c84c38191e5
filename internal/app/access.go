package app

// Access is one kind of Kubernetes request keb makes. The Helm chart's Roles
// (deploy/helm/keb/templates/rbac.yaml) grant exactly these; a test renders
// the chart and compares, and the end-to-end RBAC test runs a provisioning
// and a deprovisioning as the chart's service account to prove the list is
// complete. Add a line here with the code that needs it.
type Access struct {
	// Scope is "control" (APP_KCP_KUBECONFIG's namespace kcp-system) or
	// "pool" (the account pool's namespace garden-<APP_GARDENER_PROJECT>).
	Scope    string
	Group    string
	Resource string
	Verbs    []string
	// UsedBy names the code making these calls.
	UsedBy string
}

// Access scopes.
const (
	ScopeControl = "control"
	ScopePool    = "pool"
)

// KubernetesAccess is every request keb serve makes to the control plane and
// the account pool (requests inside runtimes use the runtime's kubeconfig).
var KubernetesAccess = []Access{
	{ScopeControl, "infrastructuremanager.kyma-project.io", "runtimes", []string{"get", "list", "watch", "create", "patch", "delete"},
		"provisioning/create_runtime (create, or get and JSON patch when it exists), check_runtime (get), update/update_initialization (get), update/update_runtime and upgrade/upgrade_cluster (get, JSON patch: infrastructuremanager.Patch), check_runtime_update and await_upgrade (get), upgrade/upgrade_initialisation (get), deprovisioning/delete_runtime, process.Watcher (list, watch), cleanup.EnvironmentsCleaner (list, delete orphans), app readiness (list one)"},
	{ScopeControl, "operator.kyma-project.io", "kymas", []string{"get", "list", "watch", "create", "patch", "delete"},
		"provisioning/apply_kyma (server-side apply, which creates), check_kyma (get), update/update_kyma (merge patch of the labels a plan change changes), upgrade/upgrade_initialisation (get), upgrade/upgrade_kyma (merge patch of spec.channel), deprovisioning/delete_kyma, process.Watcher (list, watch: Kyma states), cleanup.EnvironmentsCleaner (delete orphans), app readiness (list one)"},
	{ScopeControl, "", "secrets", []string{"get", "list", "watch", "create", "update", "patch", "delete"},
		"runtimeclient.Cache (the engine's and binding.Service's) and check_runtime (get kubeconfig-<runtimeID>), overrides.Resolve (list), overrides.NewSources (list, watch the labelled ones), overrides.Store (CreateOrUpdate), overrides.SetKyma (merge patch of the Kyma keys, update/update_runtime), deprovisioning/delete_runtime (delete the overrides Secret), cleanup.EnvironmentsCleaner (delete an orphan's kubeconfig), process.Watcher (list, watch metadata)"},
	{ScopeControl, "", "configmaps", []string{"get", "list", "watch"},
		"kyma.VersionResolver (get kyma-versions), kyma.NewVersionPins (list, watch kyma-versions), overrides.Resolve (list), overrides.NewSources (list, watch the labelled ones)"},
	// With APP_HAP_POOL_KIND=SecretBinding: core.gardener.cloud secretbindings; =Secret: secrets (the chart follows).
	{ScopePool, "security.gardener.cloud", "credentialsbindings", []string{"get", "list", "patch"},
		"hyperscaler.AccountPool: Claim, ClaimShared, MarkDirty, release, Release (get, list, merge patch of labels), Accounts, Census (list metadata)"},
	{ScopePool, "core.gardener.cloud", "shoots", []string{"get", "list"},
		"hyperscaler.AccountPool.ShootsUsing (deprovisioning/release_hyperscaler_secret: list; get the instance's own)"},
}
