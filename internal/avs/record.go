package avs

// Record is what keb created in AVS for a runtime, kept in its provisioning
// operation's record (JSON key "avs") so that a re-run creates nothing twice
// and the deprovisioning knows what to remove.
type Record struct {
	Internal *Created `json:"internal,omitempty"`
	External *Created `json:"external,omitempty"`
}

// Created is one evaluation keb created.
type Created struct {
	ID int64 `json:"id"`
	// Parent is the evaluation it hangs under (detached before deletion).
	Parent int64 `json:"parent"`
	// Deleted is set once a deprovisioning removed it.
	Deleted bool `json:"deleted,omitempty"`
}

// Of is the record's evaluation of kind (nil: none).
func (r *Record) Of(kind Kind) *Created {
	if r == nil {
		return nil
	}
	if kind == External {
		return r.External
	}
	return r.Internal
}

// Set records the evaluation of kind.
func (r *Record) Set(kind Kind, c *Created) {
	if kind == External {
		r.External = c
		return
	}
	r.Internal = c
}

// Live reports whether the evaluation exists as far as keb knows.
func (c *Created) Live() bool { return c != nil && c.ID != 0 && !c.Deleted }
