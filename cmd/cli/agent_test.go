package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/svctrace/kubectl-svctrace/nodes"
)

// TestAgentDaemonSetHoldsNoCredentials: the shipped manifest mounts no
// token, opens no port, idles with --wait, and has the netadmin profile's
// capabilities only.
func TestAgentDaemonSetHoldsNoCredentials(t *testing.T) {
	ds, err := AgentDaemonSet("registry.example/collector:v1", "netdebug")
	if err != nil {
		t.Fatal(err)
	}
	spec := ds.Spec.Template.Spec
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the agent mounts a ServiceAccount token")
	}
	c := spec.Containers[0]
	if c.Name != nodes.AgentContainerName || c.Image != "registry.example/collector:v1" || ds.Namespace != "netdebug" {
		t.Errorf("container %s image %s in %s", c.Name, c.Image, ds.Namespace)
	}
	if len(c.Ports) != 0 || strings.Join(c.Args, " ") != "--wait" {
		t.Errorf("ports %v args %v, want none and --wait", c.Ports, c.Args)
	}
	caps := c.SecurityContext.Capabilities
	if got := caps.Add; len(got) != 2 || got[0] != "NET_ADMIN" || got[1] != "NET_RAW" || len(caps.Drop) != 1 || caps.Drop[0] != "ALL" {
		t.Errorf("capabilities %+v, want the netadmin profile's", caps)
	}
	if *c.SecurityContext.AllowPrivilegeEscalation || (c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged) {
		t.Error("the agent may escalate privileges")
	}
	if ds.Spec.Template.Labels[nodes.LabelName] != nodes.AgentNameValue {
		t.Errorf("Pod labels %v do not match the agent selector %s", ds.Spec.Template.Labels, nodes.AgentSelector)
	}
}

func TestAgentInstallWaitsForReadyThenUninstallRemoves(t *testing.T) {
	c := fake.NewClientset()
	// A fake DaemonSet controller: every DaemonSet is scheduled and Ready
	// on two nodes.
	c.PrependReactor("get", "daemonsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := c.Tracker().Get(appsv1.SchemeGroupVersion.WithResource("daemonsets"), a.GetNamespace(), a.(k8stesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		ds := obj.(*appsv1.DaemonSet).DeepCopy()
		ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, UpdatedNumberScheduled: 2, NumberReady: 2}
		return true, ds, nil
	})
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	o := &AgentOptions{Image: "img:v1", CollectorNamespace: "svctrace-system", Timeout: 5 * time.Second, PollInterval: time.Millisecond, Client: c, IOStreams: streams}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "daemonset.apps/svctrace-agent created") {
		t.Errorf("install printed %q", out.String())
	}
	if err := o.Run(context.Background()); err != nil || !strings.Contains(out.String(), "configured") {
		t.Fatalf("second install: %v, %q", err, out.String())
	}
	_ = c.Tracker().Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "svctrace-agent-x", Namespace: "svctrace-system", Labels: map[string]string{nodes.LabelName: nodes.AgentNameValue}}})
	// The garbage collector removes the Pods once the DaemonSet is gone.
	c.PrependReactor("delete", "daemonsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		_ = c.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "svctrace-system", "svctrace-agent-x")
		return false, nil, nil
	})
	o.Uninstall = true
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppsV1().DaemonSets("svctrace-system").Get(context.Background(), nodes.AgentNameValue, metav1.GetOptions{}); err == nil {
		t.Error("the DaemonSet is still there after uninstall")
	}
}
