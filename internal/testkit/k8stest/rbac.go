package k8stest

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// LeaseVerbs are the least privilege k8sstore needs on Leases.
var LeaseVerbs = []string{"get", "list", "create", "update"}

// Config returns a client config for user (Admin, User or Nobody).
func (s *Server) Config(user string) *rest.Config {
	return &rest.Config{
		Host:            s.URL,
		BearerToken:     s.tokens[user],
		TLSClientConfig: rest.TLSClientConfig{CAData: s.CAData},
		QPS:             -1, // no client-side rate limit: the tests race
	}
}

// Clientset returns a clientset of the admin.
func (s *Server) Clientset(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(s.Config(Admin))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Namespace creates namespace name and, in it, the Role "nodeid" (get, list,
// create, update on leases: what k8sstore needs) bound to User, and waits
// until the apiserver's authorizer (which learns of RBAC objects through a
// watch) lets User list Leases there.
func (s *Server) Namespace(t testing.TB, name string) {
	t.Helper()
	ctx := context.Background()
	cs := s.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "nodeid", Namespace: name},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, Verbs: LeaseVerbs,
		}},
	}
	if _, err := cs.RbacV1().Roles(name).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create role: %v", err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "nodeid", Namespace: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "nodeid"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: User}},
	}
	if _, err := cs.RbacV1().RoleBindings(name).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create role binding: %v", err)
	}
	user, err := kubernetes.NewForConfig(s.Config(User))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		_, err := user.CoordinationV1().Leases(name).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return
		}
		if !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			t.Fatalf("%s lists leases in %s: %v", User, name, err)
		}
	}
}

// Kubeconfig writes a kubeconfig file for user, its context's namespace ns,
// into a temporary folder of t, and returns its path.
func (s *Server) Kubeconfig(t testing.TB, user, ns string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := s.WriteKubeconfig(p, s.URL, user, ns); err != nil {
		t.Fatal(err)
	}
	return p
}

// WriteKubeconfig writes a kubeconfig file at path for user, its context's
// namespace ns, with server as the apiserver's address (s.URL, or a proxy's
// https://host:port in front of it: the serving certificate names
// 127.0.0.1).
func (s *Server) WriteKubeconfig(path, server, user, ns string) error {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: k8stest
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: k8stest
  context:
    cluster: k8stest
    user: %s
    namespace: %s
current-context: k8stest
`, server, base64.StdEncoding.EncodeToString(s.CAData), user, s.tokens[user], user, ns)
	return os.WriteFile(path, []byte(cfg), 0o600)
}
