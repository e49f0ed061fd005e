//go:build e2e

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

package e2e

// Timeouts and names every test uses, and consistently, the counterpart of
// eventually (main_test.go). The other shared helpers are in
// helpers_<topic>_test.go: the Foo CRD, Foos, Deployments, events, the
// controller process, and the artifacts/deploy installation.

import (
	"context"
	"testing"
	"time"
)

const (
	// nodeName is the fake node of hack/kwok-node.yaml.
	nodeName = "kwok-node-0"

	// convergeTimeout bounds the wait for the controller and the cluster's
	// own controllers to bring about a state: a few seconds normally, more
	// on a loaded two-core machine.
	convergeTimeout = 60 * time.Second
	// gcTimeout bounds a wait for the garbage collector of
	// kube-controller-manager to delete what a deleted Foo owned. The
	// collector learns of a new resource (a freshly created CRD) only when
	// it next resyncs with discovery, every 30 s.
	gcTimeout = 90 * time.Second
)

// consistently checks cond every 250 ms over the whole window d and fails
// the test the first time it does not hold. It measures that something does
// NOT happen within a defined window.
func consistently(t *testing.T, d time.Duration, what string, cond func(context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cond(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !time.Now().Before(deadline) {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}
