// Package kube holds how keb writes objects to a kube-apiserver, and reads the few it reads for
// every operation.
package kube

import (
	"context"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// CreateOrUpdate is controllerutil.CreateOrUpdate for objects that usually do
// not exist yet: it applies mutate to obj (which holds only its name and
// namespace) and creates it, one request; only if the object exists already
// (a step run again) does it fall back to controllerutil.CreateOrUpdate,
// which reads the object, applies mutate to it and updates it if that changed
// anything. controllerutil.CreateOrUpdate reads first, always: a request more
// for every object a provisioning creates. mutate must, as there, set what it
// owns whatever obj held before.
func CreateOrUpdate(ctx context.Context, c client.Client, obj client.Object, mutate controllerutil.MutateFn) (controllerutil.OperationResult, error) {
	pristine := obj.DeepCopyObject()
	if err := mutate(); err != nil {
		return controllerutil.OperationResultNone, fmt.Errorf("preparing %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	err := c.Create(ctx, obj)
	switch {
	case err == nil:
		return controllerutil.OperationResultCreated, nil
	case !apierrors.IsAlreadyExists(err):
		return controllerutil.OperationResultNone, err
	}
	// Back to the name and namespace only: what mutate set for the create
	// must not mix with the stored object read into obj.
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(pristine).Elem())
	return controllerutil.CreateOrUpdate(ctx, c, obj, mutate)
}
