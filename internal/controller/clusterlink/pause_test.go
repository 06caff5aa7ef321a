package clusterlink

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// clusterReader answers Gets of the owning Cluster with obj or err.
type clusterReader struct {
	obj *unstructured.Unstructured
	err error
}

func (r clusterReader) Get(_ context.Context, _ client.ObjectKey, o client.Object, _ ...client.GetOption) error {
	if r.err != nil {
		return r.err
	}
	r.obj.DeepCopyInto(o.(*unstructured.Unstructured))
	return nil
}

func (clusterReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

func TestPaused(t *testing.T) {
	owned := &capz.AzureCluster{Name: "wc1", Namespace: "org-a", ClusterName: "wc1"}
	pausedCluster := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"paused": true}}}
	for _, tc := range []struct {
		reason    string
		annotated bool
		moving    bool // clusterctl move is deleting it
		view      *capz.AzureCluster
		reader    clusterReader
		want      bool
		wantErr   bool
	}{
		{"the AzureCluster's annotation pauses it", true, false, owned, clusterReader{err: errors.New("not read")}, true, false},
		{"the Cluster's spec.paused pauses it", false, false, owned, clusterReader{obj: pausedCluster}, true, false},
		{"a Cluster that is not paused", false, false, owned, clusterReader{obj: &unstructured.Unstructured{Object: map[string]any{}}}, false, false},
		{"no owning Cluster: not paused", false, false, &capz.AzureCluster{Name: "wc1"}, clusterReader{err: errors.New("not read")}, false, false},
		{"a Cluster that does not exist pauses nothing", false, false, owned, clusterReader{err: apierrors.NewNotFound(schema.GroupResource{Resource: "clusters"}, "wc1")}, false, false},
		{"a Cluster that cannot be read is an error, not 'not paused'", false, false, owned, clusterReader{err: errors.New("the cache is not synced")}, false, true},
		{"clusterctl move deleting the AzureCluster pauses it, whatever its Cluster", false, true, owned, clusterReader{err: apierrors.NewNotFound(schema.GroupResource{Resource: "clusters"}, "wc1")}, true, false},
	} {
		u := &unstructured.Unstructured{}
		if tc.annotated {
			u.SetAnnotations(map[string]string{capz.PausedAnnotation: ""})
		}
		if tc.moving {
			u.SetAnnotations(map[string]string{capz.DeleteForMoveAnnotation: ""})
			u.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		}
		got, err := Paused(context.Background(), tc.reader, u, tc.view)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s: Paused = %v, %v; want %v, error %v", tc.reason, got, err, tc.want, tc.wantErr)
		}
	}
}
