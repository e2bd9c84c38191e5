package provisioning_test

import (
	"encoding/json"
	"testing"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
)

// Issue 38, defect 1: an instance accepted before whole numbers were
// stored as integers holds 20.0, which encoding/json refuses for an int;
// the provisioning reads it as keb stores it now.
func TestParametersReadsWholeNumbersStoredAsSent(t *testing.T) {
	t.Parallel()
	op := &process.Operation{Instance: storage.Instance{Parameters: json.RawMessage(
		`{"name":"c1","autoScalerMax":20.0,"volumeSizeGb":8e1,"additionalWorkerNodePools":[{"name":"p","machineType":"m","autoScalerMin":3.00}]}`)}}
	p, err := provisioning.Parameters(op)
	if err != nil {
		t.Fatal(err)
	}
	if *p.AutoScalerMax != 20 || *p.VolumeSizeGb != 80 || *(*p.AdditionalWorkerNodePools)[0].AutoScalerMin != 3 {
		t.Fatalf("read %+v", p)
	}
}
