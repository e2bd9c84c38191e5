// Package btpmanager prepares a runtime for BTP Manager: the sap-btp-manager Secret with the
// Service Manager credentials and the BtpOperator CR that BTP Manager reconciles. Its types are
// BTP Manager's API, from which `make generate` writes keb's copy of the BtpOperator CRD.
//
// +groupName=operator.kyma-project.io
// +versionName=v1alpha1
package btpmanager
