package runtimeclient

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
)

// Endpoint is where a runtime's API server listens and how a client trusts
// it: what a kubeconfig for the runtime needs besides a user.
type Endpoint struct {
	Server string
	// CAData is the PEM of the certificate authority the server's
	// certificate chains to; empty when the kubeconfig trusts the system's roots.
	CAData []byte
	// TLSServerName overrides the name the server's certificate is checked against.
	TLSServerName string
}

// Endpoint returns the API server address and CA of the runtime, read from
// its kubeconfig Secret like Client's; ErrKubeconfigNotFound (wrapped)
// while there is none.
func (c *Cache) Endpoint(ctx context.Context, runtimeID string) (Endpoint, error) {
	_, kubeconfig, err := c.kubeconfig(ctx, runtimeID)
	if err != nil {
		return Endpoint{}, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return Endpoint{}, fmt.Errorf("parsing the kubeconfig of runtime %s: %w", runtimeID, err)
	}
	if cfg.Host == "" {
		return Endpoint{}, errors.New("the kubeconfig of runtime " + runtimeID + " names no server")
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		// A file path means nothing to whoever receives a kubeconfig
		// built from it: a Secret's kubeconfig must embed its CA.
		return Endpoint{}, fmt.Errorf("the kubeconfig of runtime %s names its CA by file (%s), not by data", runtimeID, cfg.CAFile)
	}
	return Endpoint{Server: cfg.Host, CAData: ca, TLSServerName: cfg.ServerName}, nil
}
