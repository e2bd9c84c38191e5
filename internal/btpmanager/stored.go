package btpmanager

import (
	"encoding/json"
	"errors"

	"github.com/kyma-keb/keb/internal/catalog"
)

// ErrUnreadableCredentials means the stored sm_operator_credentials are not
// the JSON object the broker stored. Retrying cannot repair them.
var ErrUnreadableCredentials = errors.New("stored Service Manager credentials are unreadable")

// StoredCredentials decodes an instance's stored sm_operator_credentials (the
// OSB context's object, as the broker keeps it) into the credentials BTP
// Manager reads, and checks that none is empty. The provisioning step that
// injects them and the update step that pushes new ones both read them here,
// so they fail alike: ErrUnreadableCredentials, or ErrIncompleteCredentials
// naming the empty keys. Neither error quotes a value.
func StoredCredentials(raw []byte) (Credentials, error) {
	var sm catalog.SMOperatorCredentials
	if err := json.Unmarshal(raw, &sm); err != nil {
		return Credentials{}, ErrUnreadableCredentials
	}
	creds := Credentials{ClientID: sm.ClientID, ClientSecret: sm.ClientSecret, SMURL: sm.SMURL, TokenURL: sm.URL}
	if err := checkComplete(credentialData(creds)); err != nil {
		return Credentials{}, err
	}
	return creds, nil
}
