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

package clientconfig

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/flowcontrol"

	clientset "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned"
)

// By default the controller's clients have no client-side rate limiter;
// -kube-api-qps and -kube-api-burst set one, shared by both clients.
func TestClientConfigsLimitRequestsOnlyWhenAsked(t *testing.T) {
	for name, tc := range map[string]struct {
		qps         float64
		burst       int
		wantLimited bool
		wantQPS     float32
		wantBurst   int
	}{
		"default: no limit":           {qps: 0, burst: 0, wantLimited: false, wantQPS: -1, wantBurst: 0},
		"a burst alone sets no limit": {qps: 0, burst: 400, wantLimited: false, wantQPS: -1, wantBurst: 0},
		"qps and burst":               {qps: 50, burst: 60, wantLimited: true, wantQPS: 50, wantBurst: 60},
		"qps alone: burst twice qps":  {qps: 200, burst: 0, wantLimited: true, wantQPS: 200, wantBurst: 400},
		"fractional qps":              {qps: 2.5, burst: 0, wantLimited: true, wantQPS: 2.5, wantBurst: 5},
	} {
		t.Run(name, func(t *testing.T) {
			base := &rest.Config{Host: "https://example.invalid"}
			sample, kube := ForController(base, tc.qps, tc.burst, "node-1_0b5c")
			for _, cfg := range []*rest.Config{sample, kube} {
				if cfg.QPS != tc.wantQPS || cfg.Burst != tc.wantBurst || cfg.UserAgent != "sample-controller/node-1_0b5c" || cfg.Host != base.Host {
					t.Errorf("config: QPS %v, burst %d, user agent %q, host %q", cfg.QPS, cfg.Burst, cfg.UserAgent, cfg.Host)
				}
			}
			// What counts is the limiter client-go builds from the
			// configuration: QPS 0 would get its default of 5 per second.
			fooLimiter, kubeLimiter := builtRateLimiters(t, sample, kube)
			if !tc.wantLimited {
				if fooLimiter != nil || kubeLimiter != nil {
					t.Errorf("rate limiters built: Foo client %v, built-in client %v; want none", fooLimiter, kubeLimiter)
				}
				return
			}
			if fooLimiter == nil || kubeLimiter != fooLimiter {
				t.Fatalf("Foo client limiter %v, built-in client limiter %v: want one, shared, so that -kube-api-qps bounds them together", fooLimiter, kubeLimiter)
			}
			if fooLimiter.QPS() != tc.wantQPS {
				t.Errorf("limiter QPS %v, want %v", fooLimiter.QPS(), tc.wantQPS)
			}
			// A full bucket lets the burst through at once, and no more
			// than the tokens the rate adds while the loop runs (on a
			// loaded machine, a few).
			allowed := 0
			began := time.Now()
			for fooLimiter.TryAccept() {
				allowed++
			}
			refilled := int(math.Ceil(float64(tc.wantQPS) * time.Since(began).Seconds()))
			if allowed < tc.wantBurst || allowed > tc.wantBurst+refilled {
				t.Errorf("a full bucket let %d requests through, want the burst %d (plus at most the %d refilled meanwhile)",
					allowed, tc.wantBurst, refilled)
			}
		})
	}
}

// builtRateLimiters builds the clientsets main builds from the two
// configurations and returns the rate limiter each uses.
func builtRateLimiters(t *testing.T, sample, kube *rest.Config) (foo, builtIn flowcontrol.RateLimiter) {
	t.Helper()
	sampleClient, err := clientset.NewForConfig(sample)
	if err != nil {
		t.Fatal(err)
	}
	kubeClient, err := kubernetes.NewForConfig(kube)
	if err != nil {
		t.Fatal(err)
	}
	return sampleClient.SamplecontrollerV1beta1().RESTClient().GetRateLimiter(), kubeClient.AppsV1().RESTClient().GetRateLimiter()
}

func TestClientConfigsSpeakProtobufToBuiltInTypes(t *testing.T) {
	base := &rest.Config{Host: "https://example.invalid"}
	sample, kube := ForController(base, 0, 0, "node-1_0b5c")
	if kube.ContentType != "application/vnd.kubernetes.protobuf" || sample.ContentType != "" {
		t.Errorf("content types: built-in %q, Foo %q", kube.ContentType, sample.ContentType)
	}
	if base.QPS != 0 || base.UserAgent != "" {
		t.Error("the base config was modified")
	}
}

// writeKubeconfig writes a kubeconfig whose one cluster is at server.
func writeKubeconfig(t *testing.T, dir, server string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	path := filepath.Join(dir, strings.TrimPrefix(server, "https://"))
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// The controller finds its cluster as kubectl does: -kubeconfig, then
// $KUBECONFIG, then (in a pod) the in-cluster configuration, then
// ~/.kube/config; -master overrides the server.
func TestClientConfigIsFoundLikeKubectl(t *testing.T) {
	dir := t.TempDir()
	flagFile := writeKubeconfig(t, dir, "https://flag")
	envFile := writeKubeconfig(t, dir, "https://env")
	homeFile := writeKubeconfig(t, dir, "https://home")
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a pod
	home := clientcmd.RecommendedHomeFile
	clientcmd.RecommendedHomeFile = homeFile
	t.Cleanup(func() { clientcmd.RecommendedHomeFile = home })

	for name, tc := range map[string]struct {
		kubeconfig, master, env string
		want                    string
	}{
		"flag wins over $KUBECONFIG": {kubeconfig: flagFile, env: envFile, want: "https://flag"},
		"$KUBECONFIG":                {env: envFile, want: "https://env"},
		"~/.kube/config":             {want: "https://home"},
		"-master overrides":          {kubeconfig: flagFile, master: "https://master", want: "https://master"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(clientcmd.RecommendedConfigPathEnvVar, tc.env)
			cfg, err := Load(tc.kubeconfig, tc.master)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.want {
				t.Errorf("host %s, want %s", cfg.Host, tc.want)
			}
		})
	}
}
