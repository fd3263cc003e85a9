package k8stest_test

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeid/nodeid/internal/testkit/k8stest"
)

// TestStart starts the apiserver and checks the users: the least-privilege
// user may create Leases in its namespace and nowhere else, Nobody nowhere.
func TestStart(t *testing.T) {
	s := k8stest.Start(t)
	s.Namespace(t, "ns1")
	ctx := context.Background()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	for _, tc := range []struct {
		user, ns  string
		forbidden bool
	}{
		{k8stest.User, "ns1", false},
		{k8stest.User, "default", true},
		{k8stest.Nobody, "ns1", true},
		{k8stest.Admin, "default", false},
	} {
		cs, err := kubernetes.NewForConfig(s.Config(tc.user))
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.CoordinationV1().Leases(tc.ns).Create(ctx, lease, metav1.CreateOptions{})
		if got := apierrors.IsForbidden(err); got != tc.forbidden || (!tc.forbidden && err != nil) {
			t.Errorf("%s creates a lease in %s: %v, want forbidden %v", tc.user, tc.ns, err, tc.forbidden)
		}
	}
}
