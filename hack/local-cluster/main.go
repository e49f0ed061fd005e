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

// Command local-cluster brings the local control plane of "make run" up and
// down, the same way the end-to-end tests and the benchmark do
// (test/framework): kwokctl runs etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok; a component that exits
// while the cluster comes up is started again; "up" returns once every
// component serves and the fake node is Ready and untainted, and otherwise
// says which component failed, with the end of its log.
//
//	go run ./hack/local-cluster -dir DIR up     # prints the kubeconfig's path
//	go run ./hack/local-cluster -dir DIR down   # its logs stay in DIR/logs
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/kube-samples/sample-controller/test/framework"
)

func main() {
	dir := flag.String("dir", "_output/local/run", "kwokctl's work dir (KWOK_WORKDIR) for the cluster")
	minor := flag.String("k8s-minor", os.Getenv("K8S_MINOR"),
		"the Kubernetes minor release to run, e.g. 1.36 (default: $K8S_MINOR, else the newest hack/tools pins)")
	timeout := flag.Duration("timeout", framework.DefaultTimeout,
		"how long a step of the start may make no progress before it fails")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: %s [flags] up|down\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *dir, *minor, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "local-cluster:", err)
		os.Exit(1)
	}
}

func run(cmd, dir, minor string, timeout time.Duration) error {
	root, err := framework.RepoRoot()
	if err != nil {
		return err
	}
	switch cmd {
	case "up":
		opts := []framework.ClusterOption{framework.WithTimeout(timeout)}
		if minor != "" {
			opts = append(opts, framework.WithKubernetesMinor(minor))
		}
		c, err := framework.StartCluster(root, dir, opts...)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "Kubernetes %s is up\n", c.KubernetesVersion)
		fmt.Println(c.Kubeconfig)
		return nil
	case "down":
		return framework.DeleteCluster(root, dir)
	}
	return fmt.Errorf("unknown command %q: want up or down", cmd)
}
