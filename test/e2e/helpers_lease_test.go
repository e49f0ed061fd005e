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

import (
	"context"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// leaseSampleInterval is how often a leaseSampler reads the Lease.
const leaseSampleInterval = 200 * time.Millisecond

// leaseSample is one read of the Lease.
type leaseSample struct {
	at    time.Time
	lease *coordinationv1.Lease
	err   error
}

// leaseSampler reads a Lease every leaseSampleInterval until stopped.
type leaseSampler struct {
	stop    context.CancelFunc
	done    sync.WaitGroup
	samples []leaseSample
}

// sampleLease starts reading the Lease name through leases: the admin's
// client, exempt from priority and fairness, so that what a test does to
// the controller's requests does not hold the readings back.
func sampleLease(t *testing.T, leases coordinationclient.LeaseInterface, name string) *leaseSampler {
	t.Helper()
	sampling, stop := context.WithCancel(context.Background())
	s := &leaseSampler{stop: stop}
	s.done.Go(func() {
		tick := time.NewTicker(leaseSampleInterval)
		defer tick.Stop()
		for {
			ctx, cancel := context.WithTimeout(sampling, 5*time.Second)
			lease, err := leases.Get(ctx, name, metav1.GetOptions{})
			cancel()
			s.samples = append(s.samples, leaseSample{at: time.Now(), lease: lease, err: err})
			select {
			case <-sampling.Done():
				return
			case <-tick.C:
			}
		}
	})
	t.Cleanup(func() { s.Stop() })
	return s
}

// Stop stops the readings and returns them, in order.
func (s *leaseSampler) Stop() []leaseSample {
	s.stop()
	s.done.Wait()
	return s.samples
}

// expectRenewedThroughout checks the readings of a Lease, read as before
// first: the same holder and transitions in each, and never a fence window
// (replicas.Fence: renew deadline + retry period, at most the lease duration)
// or longer without a renewal, the time since the last renewal read
// included: the leader's writes never paused, and no standby could take the
// Lease. Not the renew deadline alone: client-go's elector gives a renewal
// until the renew deadline counted from a retry period after the last one,
// and one the API server answers late carries the time it was sent.
// Fewer than a tenth of the reads may have failed.
func expectRenewedThroughout(t *testing.T, before *coordinationv1.Lease, observed []leaseSample,
	window time.Duration) {
	t.Helper()
	holder, transitions := leaseHolderOf(before), ptrValue(before.Spec.LeaseTransitions)
	var maxGap time.Duration
	last := before.Spec.RenewTime.Time
	var errs []string
	for _, s := range observed {
		if s.err != nil {
			errs = append(errs, s.err.Error())
			continue
		}
		if got := leaseHolderOf(s.lease); got != holder || ptrValue(s.lease.Spec.LeaseTransitions) != transitions {
			t.Errorf("%s: lease %s, want holder %s after %d transitions", s.at.Format("15:04:05.000"),
				describeLease(s.lease), holder, transitions)
			continue
		}
		if renewed := s.lease.Spec.RenewTime.Time; renewed.After(last) {
			maxGap = max(maxGap, renewed.Sub(last))
			last = renewed
		}
	}
	if len(observed) > 0 {
		maxGap = max(maxGap, observed[len(observed)-1].at.Sub(last))
	}
	t.Logf("%d samples of the Lease, %d failed reads; longest time without renewal %v (fence window %v)",
		len(observed), len(errs), maxGap.Round(10*time.Millisecond), window)
	if len(errs) > len(observed)/10 {
		t.Errorf("%d of %d reads of the Lease failed: %q", len(errs), len(observed), errs)
	}
	if maxGap >= window {
		t.Errorf("the Lease went %v without renewal, not less than the fence window %v", maxGap, window)
	}
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
