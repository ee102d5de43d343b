package nodes

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PodSecurityEnforceLabel is the Pod Security Admission label that decides
// whether a hostNetwork, hostPID Pod with NET_ADMIN may run in a namespace.
const PodSecurityEnforceLabel = "pod-security.kubernetes.io/enforce"

// PreflightError says, before anything is created, why collector Pods cannot
// run in the chosen namespace, with the fix.
type PreflightError struct {
	Namespace string
	Reason    string
	Fix       string
	Err       error
}

func (e *PreflightError) Error() string {
	return fmt.Sprintf("collector Pods cannot run in namespace %q: %s; %s", e.Namespace, e.Reason, e.Fix)
}

func (e *PreflightError) Unwrap() error { return e.Err }

func psaFix(ns string) string {
	return fmt.Sprintf("use --collector-namespace with a namespace that allows privileged Pods, or label this one: "+
		"kubectl label namespace %s %s=privileged --overwrite", ns, PodSecurityEnforceLabel)
}

// Preflight checks that the collector namespace exists and admits the
// collector Pod, without creating anything: the namespace's Pod Security
// label first (hostNetwork, hostPID and NET_ADMIN need level "privileged"), then a
// server-side dry-run create, which runs every admission plugin (PSA with
// cluster defaults, policy webhooks) and persists nothing.
func Preflight(ctx context.Context, c kubernetes.Interface, o PodSpecOptions, node string) error {
	ns, err := c.CoreV1().Namespaces().Get(ctx, o.Namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return &PreflightError{Namespace: o.Namespace, Reason: "the namespace does not exist",
			Fix: fmt.Sprintf("create it: kubectl create namespace %s && kubectl label namespace %s %s=privileged", o.Namespace, o.Namespace, PodSecurityEnforceLabel), Err: err}
	case apierrors.IsForbidden(err):
		// Reading namespaces is optional; the dry run below still tells.
	case err != nil:
		return fmt.Errorf("checking collector namespace %s: %w", o.Namespace, err)
	default:
		if level := ns.Labels[PodSecurityEnforceLabel]; level != "" && level != "privileged" {
			return &PreflightError{Namespace: o.Namespace,
				Reason: fmt.Sprintf("Pod Security Admission enforces level %q there, which forbids hostNetwork, hostPID and the NET_ADMIN capability the collector needs", level),
				Fix:    psaFix(o.Namespace)}
		}
	}
	pod, err := NewPod(node, []byte(`{}`), o)
	if err != nil {
		return err
	}
	_, err = c.CoreV1().Pods(o.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "violates PodSecurity") {
		return &PreflightError{Namespace: o.Namespace, Reason: "Pod Security Admission rejects the collector Pod (" + err.Error() + ")", Fix: psaFix(o.Namespace), Err: err}
	}
	if apierrors.IsForbidden(err) {
		return &PreflightError{Namespace: o.Namespace,
			Reason: fmt.Sprintf("missing permission: verb create on resource pods (API group \"\") in namespace %s", o.Namespace),
			Fix:    fmt.Sprintf("bind the svctrace-collector Role there (kubectl -n %s create rolebinding svctrace-collector-$USER --role=svctrace-collector --user=$USER; see the README's RBAC section), or use --no-node", o.Namespace),
			Err:    err}
	}
	return fmt.Errorf("dry-run of the collector Pod in namespace %s failed: %w", o.Namespace, err)
}
