/*
Copyright The Sample Controller Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package clientconfig is how the controller finds its cluster and how its
// clients talk to it: the kubeconfig found as kubectl finds it, a user agent
// naming the replica, protobuf for built-in types, and no client-side rate
// limit unless asked for.
//
// Why upstream's way is not enough: upstream takes client-go's defaults, a
// client-side limit of 5 requests per second and JSON. At 5 per second a
// cold start over 1,000 Foos takes minutes; with no client-side limit the
// API server's priority and fairness paces the controller (measured in
// docs/performance.md, "Defaults").
package clientconfig

import (
	"math"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// Load finds the cluster the way kubectl and controller-runtime
// do: the -kubeconfig flag, else the files in $KUBECONFIG, else the pod's
// in-cluster configuration, else ~/.kube/config. -master overrides the
// server of whichever kubeconfig is used.
func Load(kubeconfig, masterURL string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules() // $KUBECONFIG, else ~/.kube/config
	rules.ExplicitPath = kubeconfig
	if kubeconfig == "" && masterURL == "" && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
	}
	overrides := &clientcmd.ConfigOverrides{ClusterInfo: clientcmdapi.Cluster{Server: masterURL}}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
}

// ForController returns the client configurations for Foos and for built-in
// types, both with the user agent sample-controller/<identity>, which tells
// in the API server's audit log which replica sent a request. The second
// also speaks protobuf, cheaper to encode and decode than JSON (custom
// resources only speak JSON).
//
// By default neither has a client-side rate limiter: the API server's
// priority and fairness (on since Kubernetes 1.20, so on every version this
// controller supports) queues or refuses what it cannot take, and the
// controller retries refused requests with backoff. A fixed client-side
// budget would only cap a cold start on a control plane that could take
// more. With -kube-api-qps the two share one token bucket, so that the
// limit bounds every request the controller makes (Foos, Deployments,
// events, discovery) together. The leader election and metrics-auth clients
// are built apart from these configurations, never behind that bucket
// (pkg/replicas, pkg/serving).
func ForController(base *rest.Config, qps float64, burst int, identity string) (sample, kube *rest.Config) {
	sample = rest.CopyConfig(base)
	sample.QPS, sample.Burst, sample.RateLimiter = rateLimit(qps, burst)
	sample.UserAgent = samplecontroller.ControllerName + "/" + identity
	kube = rest.CopyConfig(sample)
	kube.ContentType = "application/vnd.kubernetes.protobuf"
	kube.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return sample, kube
}

// rateLimit turns -kube-api-qps and -kube-api-burst into a rest.Config's
// QPS, Burst and RateLimiter. No limit must be spelt as a negative QPS and a
// nil RateLimiter: client-go reads QPS 0 as its default of 5 per second.
func rateLimit(qps float64, burst int) (float32, int, flowcontrol.RateLimiter) {
	if qps <= 0 {
		return -1, 0, nil
	}
	if burst <= 0 {
		burst = int(math.Ceil(2 * qps))
	}
	return float32(qps), burst, flowcontrol.NewTokenBucketRateLimiter(float32(qps), burst)
}
