package storage

// WaitingAccepts is how many CreateProvisioning calls wait for the accept
// transaction in flight: tests wait for a batch to form before releasing it.
func (s *Store) WaitingAccepts() int {
	s.accepts.mu.Lock()
	defer s.accepts.mu.Unlock()
	return len(s.accepts.waiting)
}

// MaxAcceptsInFlight is how many accepts a test must hold in flight before
// further ones queue.
const MaxAcceptsInFlight = maxAcceptsInFlight
