package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// etcdWriter writes objects into the control plane's etcd as the
// kube-apiserver stores them (JSON under /registry/<group>/<resource>/...),
// through etcd's JSON gateway, a transaction of many at once. The
// kube-apiserver watches etcd, so it serves them like objects it created
// itself. It is the bulk path: the API path costs the kube-apiserver about
// 7 ms of CPU per request (schema validation, pruning, managed fields),
// which for 100,000 runtimes' 500,000 requests is more than `make scale`
// has on two cores.
type etcdWriter struct {
	url    string
	client *http.Client
}

// maxTxnOps is etcd's default --max-txn-ops: the most puts per transaction.
const maxTxnOps = 128

type etcdKV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// put writes kvs (key to value) in one transaction.
func (w *etcdWriter) put(ctx context.Context, kvs map[string][]byte) error {
	type requestPut struct {
		RequestPut etcdKV `json:"requestPut"`
	}
	var txn struct {
		Success []requestPut `json:"success"`
	}
	for k, v := range kvs {
		txn.Success = append(txn.Success, requestPut{etcdKV{base64.StdEncoding.EncodeToString([]byte(k)), base64.StdEncoding.EncodeToString(v)}})
	}
	// A busy etcd answers "request timed out" (503); the puts are
	// idempotent, so the transaction is sent again.
	var err error
	for attempt := range 6 {
		if _, err = w.call(ctx, "/v3/kv/txn", txn); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * time.Second):
		}
	}
	return err
}

func (w *etcdWriter) call(ctx context.Context, path string, req any) ([]byte, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	res, err := w.client.Do(r)
	if err != nil {
		return nil, fmt.Errorf("etcd %s: %w", path, err)
	}
	defer res.Body.Close()
	var out bytes.Buffer
	if _, err := out.ReadFrom(res.Body); err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("etcd %s: %s: %s", path, res.Status, out.String())
	}
	return out.Bytes(), nil
}

// storageKey is where the kube-apiserver keeps obj: /registry/<resource>/...
// for the core group, /registry/<group>/<resource>/... for others.
func storageKey(group, resource string, obj client.Object) string {
	if group == "" {
		return fmt.Sprintf("/registry/%s/%s/%s", resource, obj.GetNamespace(), obj.GetName())
	}
	return fmt.Sprintf("/registry/%s/%s/%s/%s", group, resource, obj.GetNamespace(), obj.GetName())
}

// stored is obj as the kube-apiserver would store it after a create by
// template's writers: a new UID, the creation time, generation 1, and
// template's managed fields (the same writers wrote the same fields).
func stored(obj client.Object, template []metav1.ManagedFieldsEntry) ([]byte, error) {
	obj.SetUID(types.UID(newUID()))
	obj.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
	if obj.GetGeneration() == 0 && obj.GetObjectKind().GroupVersionKind().Group != "" {
		obj.SetGeneration(1)
	}
	obj.SetManagedFields(template)
	obj.SetResourceVersion("")
	return json.Marshal(obj)
}

func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
