package catalog

// paramAuditLogAccess is upstream's audit log switch. Upstream offers it only with its
// broker.auditLogAccess setting, shipped false: then no schema names it, paid plans accept it
// and write nothing, and trial and free refuse it. keb does the same and has no setting to offer
// it, as the Runtime CR contract it writes against (KIM's CRD in resources/crds) has no audit
// log field to write it to.
const paramAuditLogAccess = "auditLogAccess"

// acceptsAuditLogAccess reports whether a plan accepts auditLogAccess without naming it: every
// plan but trial and free, as upstream.
func acceptsAuditLogAccess(plan Plan) bool {
	return !plan.Trial && !plan.BasicForm
}

func auditLogAccessSchema() map[string]any {
	return map[string]any{"type": "boolean", "title": "Audit log access",
		"description": "Accepted and ignored, as upstream KEB with its shipped settings."}
}

// withoutAuditLogAccess checks a PATCH's auditLogAccess on a plan that accepts it (a boolean)
// and returns doc without it, as it changes nothing; a plan that does not accept it keeps it
// in doc, to be refused as not available.
func withoutAuditLogAccess(plan Plan, doc any) (any, []FieldProblem) {
	obj, ok := doc.(map[string]any)
	if !ok || !acceptsAuditLogAccess(plan) {
		return doc, nil
	}
	v, sent := obj[paramAuditLogAccess]
	if !sent {
		return doc, nil
	}
	if _, isBool := v.(bool); !isBool {
		return doc, []FieldProblem{{Field: paramAuditLogAccess, Message: "must be a boolean"}}
	}
	return without(doc, []string{paramAuditLogAccess}), nil
}
