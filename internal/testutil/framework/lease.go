package framework

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// RenewNodeLease keeps a kubelet-less node's Lease fresh (created if
// absent, renewed every 10 s) until the test ends, so that the node
// lifecycle controller keeps the Node Ready and svctrace's planner
// inspects it.
func RenewNodeLease(t testing.TB, client kubernetes.Interface, node string) {
	leases := client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	renew := func() {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l, err := leases.Get(c, node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, _ = leases.Create(c, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node), LeaseDurationSeconds: ptr.To(int32(40)),
					RenewTime: &metav1.MicroTime{Time: time.Now()}}}, metav1.CreateOptions{})
			return
		}
		if err == nil {
			l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			_, _ = leases.Update(c, l, metav1.UpdateOptions{})
		}
	}
	renew()
	done := make(chan struct{})
	go func() {
		tk := time.NewTicker(10 * time.Second)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				renew()
			}
		}
	}()
	t.Cleanup(func() { close(done) })
}
