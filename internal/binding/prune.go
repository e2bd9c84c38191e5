package binding

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/storage"
)

// PruneJob names the periodic job that removes expired bindings.
const PruneJob = "prune_bindings"

// pruneBatch bounds the bindings one pass reads; the next pass takes the rest.
const pruneBatch = 200

// Prune removes expired bindings from their runtimes and the database, and
// fails binds still in progress past their deadline (their replica died
// mid-bind), removing what they created. It returns how many it handled;
// one binding's failure does not stop the others.
func (s *Service) Prune(ctx context.Context) (int, error) {
	due, err := s.store.DueBindings(ctx, s.Now(), pruneBatch)
	if err != nil {
		return 0, err
	}
	var errs []error
	done := 0
	for _, b := range due {
		log := s.log.WithFields(logrus.Fields{"instance_id": b.InstanceID, "binding_id": b.BindingID})
		if err := s.removeFromRuntime(ctx, b); err != nil {
			errs = append(errs, fmt.Errorf("binding %s: %w", b.BindingID, err))
			continue
		}
		if b.State == storage.BindingInProgress {
			if err := s.store.FailBinding(ctx, b.BindingID, b.OperationID, "the binding was not completed in time; bind again"); err != nil {
				errs = append(errs, err)
				continue
			}
			log.Warn("binding: failed a bind that did not finish by its deadline")
		} else {
			if _, err := s.store.DeleteBinding(ctx, b.BindingID, b.OperationID); err != nil {
				errs = append(errs, err)
				continue
			}
			log.WithField("expired_at", b.ExpiresAt).Info("binding expired and removed")
		}
		done++
	}
	return done, errors.Join(errs...)
}
