package update_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/update"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/k8stest"
)

// env is the package's kube-apiserver with keb's CRDs. It stands for the control plane and, where
// a test says so, for a runtime: the sap-btp-manager Secret has a fixed name in kyma-system, so
// the tests that use it as a runtime run one after another.
var env *k8stest.Environment

func TestMain(m *testing.M) { k8stest.Main(m, &env) }

func kcpClient(t *testing.T) client.Client { return processtest.Client(t, env.Config) }

// testConfig has recognisable values, so a test can tell which one a step used.
func testConfig() update.Config {
	return update.Config{BTPManagerTimeout: 20 * time.Minute, BTPManagerPoll: 10 * time.Second,
		RuntimeTimeout: 40 * time.Minute, RuntimePoll: 7 * time.Second, RuntimeGrace: time.Minute, AccountTimeout: 9 * time.Minute, AccountPoll: 11 * time.Second}
}

// credentials are the new sm_operator_credentials of a PATCH.
var credentials = catalog.SMOperatorCredentials{ClientID: "new-cid", ClientSecret: "new-csecret",
	SMURL: "https://sm.new.example.com", URL: "https://auth.new.example.com", XSAppName: "app"}

// newOp returns an update operation of a running azure instance holding creds (nil: none).
func newOp(t *testing.T, creds *catalog.SMOperatorCredentials) *process.Operation {
	t.Helper()
	inst := processtest.Instance(t, catalog.AzurePlanID)
	inst.RuntimeID = uuid.NewString()
	inst.Provider = "azure"
	inst.ClusterID = uuid.NewString()
	inst.ShootName = "c-" + strings.ReplaceAll(inst.RuntimeID, "-", "")[:7]
	inst.State = storage.RuntimeSucceeded
	if creds != nil {
		inst.Credentials = []byte(processtest.MustJSON(t, creds))
	}
	return processtest.Operation(storage.OperationTypeUpdate, inst)
}
