package orchestration

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/storage"
)

// requestNames are every field name an orchestration body has, at any
// level, spelt as keb reads them.
var requestNames = map[string]bool{"targets": true, "include": true, "exclude": true, "target": true, "globalAccount": true,
	"subAccount": true, "runtimeID": true, "planName": true, "region": true, "shoot": true, "strategy": true, "strategies": true,
	"type": true, "schedule": true, "parallel": true, "workers": true, "dryRun": true, "kyma": true, "version": true,
	"channel": true, "kubernetes": true, "machineImage": true, "machineImageVersion": true}

// walkKeys reads doc with encoding/json's tokenizer and reports the first
// key that is named twice in one object, that keb does not spell so, or
// whose value is null.
func walkKeys(doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k := kt.(string)
				switch {
				case seen[k]:
					return errors.New("duplicate key " + k)
				case !requestNames[k]:
					return errors.New("key " + k)
				}
				seen[k] = true
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case nil:
			return errors.New("null")
		}
		return nil
	}
	if err := walk(); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data")
	}
	return nil
}

// FuzzParseRequest: an accepted orchestration body is one object whose
// every key is spelt as keb reads it and named once, with no null; its Kyma
// target is a version provisioning would take and a channel of the Kyma CR;
// and the parameters keb stores read back as themselves.
func FuzzParseRequest(f *testing.F) {
	f.Add(true, []byte(`{"targets":{"include":[{"target":"all"}]},"kyma":{"version":"2.21.0","channel":"fast"},"dryRun":true}`))
	f.Add(false, []byte(`{"targets":{"include":{"planName":"azure"},},"strategies":{"schedule":"maintenanceWindow","parallel":{"workers":5}},"kubernetes":{"version":"1.31.2"},}`))
	d := Defaults{KymaVersion: "2.20.0", KubernetesVersion: "1.31", MachineImage: "gardenlinux", MachineImageVersion: "1592.1"}
	f.Fuzz(func(t *testing.T, kyma bool, body []byte) {
		opType := storage.OperationTypeUpgradeCluster
		if kyma {
			opType = storage.OperationTypeUpgradeKyma
		}
		p, err := ParseRequest(body, opType, d)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field == "" || fe.Msg == "" {
				t.Fatalf("refusal %v does not name a field", err)
			}
			return
		}
		if err := walkKeys(withoutTrailingCommas(body)); err != nil {
			t.Fatalf("accepted %q: %v", body, err)
		}
		if len(p.Targets.Include) == 0 || p.Strategy.Parallel.Workers < 1 || p.Strategy.Parallel.Workers > MaxWorkers {
			t.Fatalf("accepted %q as %+v", body, p)
		}
		if kyma {
			if p.Kyma == nil || p.Kubernetes != nil || catalog.ValidateKymaVersion(p.Kyma.Version) != nil {
				t.Fatalf("accepted %q as Kyma %+v", body, p.Kyma)
			}
			if c := p.Kyma.Channel; c != "" && c != controlplane.ChannelRegular && c != controlplane.ChannelFast {
				t.Fatalf("accepted channel %q", c)
			}
		}
		stored, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseRequest(stored, opType, d)
		if err != nil || !reflect.DeepEqual(again, p) {
			t.Fatalf("stored parameters %s read back as %+v, %v; want %+v", stored, again, err, p)
		}
	})
}
