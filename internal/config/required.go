package config

import (
	"fmt"
	"os"
	"strings"
)

// MissingForServe lists every required setting of `keb serve` that is
// unset, by its variable, so an operator fixes them all in one go instead of
// one per restart. inCluster says whether an empty control-plane kubeconfig
// means the pod's own service account.
func (c *Config) MissingForServe(inCluster bool) []string {
	var missing []string
	if c.DatabaseURL == "" {
		missing = append(missing, "APP_DATABASE_URL (PostgreSQL URL; DATABASE_URL also works)")
	}
	if c.DatabaseSecretKey == "" {
		missing = append(missing, "APP_DATABASE_SECRET_KEY (32-byte key, raw or base64, sealing credentials at rest)")
	}
	if len(c.JWKSURLs) == 0 && len(c.PublicKeyFiles) == 0 && !c.TrustGateway {
		missing = append(missing, "APP_AUTH_JWKS_URLS or APP_AUTH_PUBLIC_KEY_FILES (keys of the token issuer)")
	}
	if c.Engine.Workers > 0 && c.Engine.KCPKubeconfig == "" && !inCluster {
		missing = append(missing, "APP_KCP_KUBECONFIG (kubeconfig of the control plane; KUBECONFIG also works; or APP_WORKERS=0 to only accept requests)")
	}
	return missing
}

// CheckServe reports every missing required setting at once.
func (c *Config) CheckServe() error {
	missing := c.MissingForServe(os.Getenv("KUBERNETES_SERVICE_HOST") != "")
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("missing required settings:\n  %s", strings.Join(missing, "\n  "))
}
