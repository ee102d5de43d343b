package nodes

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// The node agent: an opt-in DaemonSet (deploy/agent.yaml) whose Pods run the
// collector image idle (--wait). A trace execs the collector in the agent
// Pod on a node, through the API server with the user's credentials, instead
// of creating, waiting for and deleting a Pod there.
const (
	AgentNameValue     = "svctrace-agent"
	AgentContainerName = "agent"
	// AgentCollector is the collector binary, found on the image's PATH
	// (/usr/local/bin); the request travels on stdin.
	AgentCollector = "svctrace-collector"

	// Transports a node's observation came through (report metadata).
	TransportAgent     = "agent"
	TransportEphemeral = "ephemeral-pod"
)

// AgentSelector selects the agent's Pods.
var AgentSelector = LabelName + "=" + AgentNameValue

// ExecFunc runs command in a container with stdin and returns its stdout.
type ExecFunc func(ctx context.Context, namespace, pod, container string, command []string, stdin []byte) ([]byte, error)

// agentPods maps a node to its Ready agent Pod, when the user may exec into
// them (a SelfSubjectAccessReview for pods/exec create in namespace); it
// returns why not otherwise, for the report.
func agentPods(ctx context.Context, c kubernetes.Interface, namespace string) (map[string]string, string) {
	list, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: AgentSelector})
	if err != nil || len(list.Items) == 0 {
		return nil, ""
	}
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "create", Resource: "pods", Subresource: "exec"}}}
	res, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, ssar, metav1.CreateOptions{})
	if err != nil {
		return nil, "the node agent is installed but its exec permission could not be checked (" + err.Error() + "); used collector Pods"
	}
	if !res.Status.Allowed {
		return nil, "the node agent is installed but you may not create pods/exec in " + namespace + " (bind the svctrace-agent-user Role of deploy/rbac.yaml); used collector Pods"
	}
	out := map[string]string{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil && podReady(p) {
			out[p.Spec.NodeName] = p.Name
		}
	}
	return out, ""
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// runAgent execs the collector in the agent Pod with the request on stdin
// and returns the observation it printed.
func runAgent(ctx context.Context, exec ExecFunc, namespace, pod string, requestJSON []byte) ([]byte, error) {
	// Gzipped: the request of a 5,000-endpoint Service shrinks tenfold on
	// its way through the API server; the collector tells it by its magic.
	// A large request comes gzipped already (PlannedNode.EncodedRequest).
	gz := requestJSON
	if !collectorapi.IsGzip(gz) {
		var err error
		if gz, err = collectorapi.GzipRequest(requestJSON); err != nil {
			return nil, err
		}
	}
	out, err := exec(ctx, namespace, pod, AgentContainerName, []string{AgentCollector, "--request-file", "-"}, gz)
	if err != nil {
		return nil, err
	}
	return ExtractJSON(out)
}

// RESTExec is an ExecFunc over pods/exec, WebSocket first and SPDY when the
// server does not upgrade, as kubectl exec does.
func RESTExec(cfg *rest.Config, c kubernetes.Interface) ExecFunc {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		// The streaming executors do not add client-go's default, and the
		// API server's audit log should name the plugin, not Go's HTTP client.
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return func(ctx context.Context, namespace, pod, container string, command []string, stdin []byte) ([]byte, error) {
		req := c.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdin: true, Stdout: true, Stderr: true}, scheme.ParameterCodec)
		spdy, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, req.URL())
		if err != nil {
			return nil, err
		}
		ws, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, req.URL().String())
		if err != nil {
			return nil, err
		}
		ex, err := remotecommand.NewFallbackExecutor(ws, spdy, httpstream.IsUpgradeFailure)
		if err != nil {
			return nil, err
		}
		var stdout, stderr bytes.Buffer
		err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: bytes.NewReader(stdin), Stdout: &stdout, Stderr: &stderr})
		if err != nil {
			if s := bytes.TrimSpace(stderr.Bytes()); len(s) > 0 {
				return nil, fmt.Errorf("%w: %s", err, s)
			}
			return nil, err
		}
		return stdout.Bytes(), nil
	}
}
