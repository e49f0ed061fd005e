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

package main

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kube-samples/sample-controller/pkg/leader"
	"github.com/kube-samples/sample-controller/pkg/serving"
)

// The defaults a user gets, and the command line parsed into options.
func TestFlags(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o := addFlags(fs)
	if o.workers != 8 || o.resyncPeriod != 10*time.Hour || o.kubeAPIQPS != 200 || o.kubeAPIBurst != 400 ||
		o.metrics != (serving.MetricsOptions{BindAddress: ":8443", Secure: true}) || o.probeAddr != ":8081" || o.namespace != "" {
		t.Errorf("defaults: %+v", o)
	}
	le := o.leaderElection
	if le != (leader.Config{Enabled: true, Namespace: "default", Name: "sample-controller",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}) {
		t.Errorf("leader election defaults: %+v", le)
	}
	if err := fs.Parse([]string{"-namespace=team-a", "-workers=3", "-resync-period=1m", "-kube-api-qps=50",
		"-kube-api-burst=60", "-leader-elect=false", "-profiling", "-v=4", "-logging-format=json"}); err != nil {
		t.Fatal(err)
	}
	if o.namespace != "team-a" || o.workers != 3 || o.resyncPeriod != time.Minute || o.kubeAPIQPS != 50 ||
		o.kubeAPIBurst != 60 || o.leaderElection.Enabled || !o.metrics.Profiling || o.logging.Format != "json" || o.logging.Verbosity != 4 {
		t.Errorf("parsed: %+v, logging %+v", o, o.logging)
	}
}

func TestClientConfigs(t *testing.T) {
	o := &options{kubeAPIQPS: 200, kubeAPIBurst: 400}
	base := &rest.Config{Host: "https://example.invalid"}
	sample, kube := clientConfigs(base, o, "node-1_0b5c")
	for _, cfg := range []*rest.Config{sample, kube} {
		if cfg.QPS != 200 || cfg.Burst != 400 || cfg.UserAgent != "sample-controller/node-1_0b5c" || cfg.Host != base.Host {
			t.Errorf("config %+v", cfg)
		}
	}
	if sample.RateLimiter == nil || kube.RateLimiter != sample.RateLimiter {
		t.Error("Foo and built-in clients must share one rate limiter, so -kube-api-qps bounds them together")
	}
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
			cfg, err := loadClientConfig(tc.kubeconfig, tc.master)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.want {
				t.Errorf("host %s, want %s", cfg.Host, tc.want)
			}
		})
	}
}
