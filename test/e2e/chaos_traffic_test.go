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

// The users of the chaos scenarios: random operations at a steady rate,
// drawn from a seeded generator, on the Foos and their Deployments. An
// operation the API server refuses or does not answer (it is down, paused,
// or the Foo was just deleted) is counted and not retried: users give up
// too, and the invariants concern what was accepted.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// opTimeout bounds one user operation: a paused API server answers
// nothing.
const opTimeout = 10 * time.Second

// traffic is the users' goroutine and what it did.
type traffic struct {
	ns   string
	min  int // Foos are not deleted below this count
	rng  *rand.Rand
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	foos   []string // the Foos the users believe exist
	next   int      // index of the next new Foo
	done_  map[string]int
	failed map[string]int
}

// userOp is one kind of user operation; ok false means it was refused or
// not answered.
type userOp struct {
	name   string
	weight int
	run    func(ctx context.Context, tr *traffic, foo string) error
}

// userOps are what users do, with their relative frequency.
var userOps = []userOp{
	{"scale-foo", 6, func(ctx context.Context, tr *traffic, foo string) error {
		return tr.patchFoo(ctx, foo, fmt.Sprintf(`{"spec":{"replicas":%d}}`, 1+tr.intN(5)))
	}},
	{"kubectl-scale", 2, func(_ context.Context, tr *traffic, foo string) error {
		_, err := cluster.Kubectl("", "scale", "-n", tr.ns, "--timeout=10s", "foo/"+foo, "--replicas="+strconv.Itoa(1+tr.intN(5)))
		return err
	}},
	{"rename", 2, func(ctx context.Context, tr *traffic, foo string) error {
		return tr.patchFoo(ctx, foo, fmt.Sprintf(`{"spec":{"deployment":{"name":"%s-r%d"}}}`, foo, tr.intN(1000)))
	}},
	{"delete-foo", 1, func(ctx context.Context, tr *traffic, foo string) error {
		if !tr.forget(foo) {
			return nil
		}
		return cluster.Sample.SamplecontrollerV1beta1().Foos(tr.ns).Delete(ctx, foo, metav1.DeleteOptions{})
	}},
	{"create-foo", 1, func(ctx context.Context, tr *traffic, _ string) error {
		name := tr.newName()
		_, err := cluster.Sample.SamplecontrollerV1beta1().Foos(tr.ns).Create(ctx, newFoo(tr.ns, name, name, int32p(int32(1+tr.intN(3)))), metav1.CreateOptions{})
		if err == nil {
			tr.remember(name)
		}
		return err
	}},
	{"delete-deployment", 1, func(ctx context.Context, tr *traffic, foo string) error {
		return tr.onDeployment(ctx, foo, func(name string) error {
			return cluster.Kube.AppsV1().Deployments(tr.ns).Delete(ctx, name, metav1.DeleteOptions{})
		})
	}},
	{"drift-replicas", 2, func(ctx context.Context, tr *traffic, foo string) error {
		return tr.patchDeployment(ctx, foo, types.MergePatchType, fmt.Sprintf(`{"spec":{"replicas":%d}}`, 6+tr.intN(3)))
	}},
	{"drift-image", 1, func(ctx context.Context, tr *traffic, foo string) error {
		return tr.patchDeployment(ctx, foo, types.StrategicMergePatchType,
			`{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:drifted"}]}}}}`)
	}},
}

// startTraffic starts the users: rate operations per second on the Foos
// named, until stopped.
func startTraffic(t *testing.T, ns string, foos []string, seed uint64, rate float64) *traffic {
	t.Helper()
	tr := &traffic{ns: ns, min: len(foos) / 2, rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), foos: append([]string(nil), foos...),
		next: len(foos), stop: make(chan struct{}), done: make(chan struct{}), done_: map[string]int{}, failed: map[string]int{}}
	go tr.loop(time.Duration(float64(time.Second) / rate))
	t.Cleanup(tr.halt)
	return tr
}

func (tr *traffic) loop(every time.Duration) {
	defer close(tr.done)
	total := 0
	for _, op := range userOps {
		total += op.weight
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-tr.stop:
			return
		case <-tick.C:
		}
		op, foo := tr.pick(total)
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		err := op.run(ctx, tr, foo)
		cancel()
		tr.mu.Lock()
		if err != nil {
			tr.failed[op.name]++
		} else {
			tr.done_[op.name]++
		}
		tr.mu.Unlock()
	}
}

// pick draws an operation and a Foo.
func (tr *traffic) pick(total int) (userOp, string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := tr.rng.IntN(total)
	op := userOps[0]
	for _, o := range userOps {
		if n < o.weight {
			op = o
			break
		}
		n -= o.weight
	}
	foo := ""
	if len(tr.foos) > 0 {
		foo = tr.foos[tr.rng.IntN(len(tr.foos))]
	}
	return op, foo
}

func (tr *traffic) intN(n int) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.rng.IntN(n)
}

// someFoos draws n distinct Foos.
func (tr *traffic) someFoos(n int) []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	perm := tr.rng.Perm(len(tr.foos))
	out := make([]string, 0, min(n, len(perm)))
	for _, i := range perm[:min(n, len(perm))] {
		out = append(out, tr.foos[i])
	}
	return out
}

// forget drops foo from the Foos believed to exist, unless that would
// leave fewer than min; it reports whether it did.
func (tr *traffic) forget(foo string) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.foos) <= tr.min {
		return false
	}
	for i, f := range tr.foos {
		if f == foo {
			tr.foos = append(tr.foos[:i], tr.foos[i+1:]...)
			return true
		}
	}
	return false
}

func (tr *traffic) remember(foo string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.foos = append(tr.foos, foo)
}

func (tr *traffic) newName() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.next++
	return chaosFooName(tr.next - 1)
}

func (tr *traffic) patchFoo(ctx context.Context, foo, patch string) error {
	_, err := cluster.Sample.SamplecontrollerV1beta1().Foos(tr.ns).Patch(ctx, foo, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// onDeployment calls fn with the name of the Deployment foo asks for.
func (tr *traffic) onDeployment(ctx context.Context, foo string, fn func(name string) error) error {
	f, err := cluster.Sample.SamplecontrollerV1beta1().Foos(tr.ns).Get(ctx, foo, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return fn(f.Spec.Deployment.Name)
}

func (tr *traffic) patchDeployment(ctx context.Context, foo string, pt types.PatchType, patch string) error {
	return tr.onDeployment(ctx, foo, func(name string) error {
		_, err := cluster.Kube.AppsV1().Deployments(tr.ns).Patch(ctx, name, pt, []byte(patch), metav1.PatchOptions{FieldManager: "chaos-user"})
		return err
	})
}

// halt stops the users and waits for the operation under way.
func (tr *traffic) halt() {
	select {
	case <-tr.stop:
	default:
		close(tr.stop)
	}
	<-tr.done
}

// String says what the users did: operations done and refused, by kind.
func (tr *traffic) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	parts := make([]string, 0, len(userOps))
	for _, op := range userOps {
		parts = append(parts, fmt.Sprintf("%s %d (+%d refused)", op.name, tr.done_[op.name], tr.failed[op.name]))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d Foos now; %s", len(tr.foos), strings.Join(parts, ", "))
}
