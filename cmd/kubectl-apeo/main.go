// kubectl-apeo is the operator's kubectl plugin: `kubectl apeo explain
// <namespace>/<cluster>` walks one workload cluster's wiring and prints
// where it stops and what to change (internal/explain). Put it on the PATH
// as kubectl-apeo (make build writes bin/kubectl-apeo).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/explain"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := explain.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, connect)
	stop()
	os.Exit(code)
}

// connect reads the kubeconfig as kubectl does (KUBECONFIG, then
// ~/.kube/config, unless a path is given).
func connect(kubeconfig, kubeContext string) (client.Reader, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	scheme := k8sruntime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}
