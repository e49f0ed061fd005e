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

package replicas

import (
	"context"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// boundaries are the ranges of this replica's shards: those of the
// boundaries Lease of its count if it splits them by weight and so does
// every live member of its count, else equal ranges; and whether they are
// by weight (rebalance). A replica that splits equally, told so or of a
// release before boundaries, holds every replica of its count to equal
// ranges: the shares that Assign hands out are of one split, which each
// replica of the count must read alike. The replicas read the Lease in the
// round's List of the Leases: no request of its own.
func (r *Replica[C]) boundaries(ctx context.Context, leases map[string]*coordinationv1.Lease,
	now time.Time) (Boundaries, bool) {
	equal := EqualBoundaries(r.count)
	if r.weigh == nil {
		return equal, false
	}
	count := strconv.Itoa(r.count)
	for name, lease := range leases {
		if lease.Labels[LabelLeaseSet] == r.cfg.Name && isMemberLease(r.cfg.Name, name) &&
			lease.Labels[LabelShards] == count && holderOf(lease) != "" && !r.expired(name, now) &&
			lease.Labels[LabelBoundaries] != BoundariesWeighted {
			return equal, false
		}
	}
	lease := leases[BoundariesLeaseName(r.cfg.Name, r.count)]
	if lease == nil {
		return equal, true
	}
	b, err := parseBoundaries(r.count, lease.Annotations[AnnotationBoundaries])
	if err != nil {
		// Written by no replica: the next weighing writes it anew.
		klog.FromContext(ctx).V(2).Info("The boundaries Lease holds no boundaries; the ranges are equal",
			"lease", lease.Name, "err", err)
		return equal, true
	}
	return b, true
}

// rebalance weighs the Foos in the background, at most every
// RebalancePeriod, and not within that period of the boundaries Lease's last
// change; and writes the Lease where rebalanced says the ranges should split
// anew, or, none published yet, at once: the replicas take no shard until
// then. The replica that Assign gives shard 0 weighs, one and not each: a
// weighing is a paged list of every Foo's metadata. Two replicas that each
// think shard 0 theirs (a member joining or leaving, seen by one and not yet
// by the other) write nothing twice: each write is made on the Lease as
// read (its resourceVersion, or a create), and the later is refused. A
// failed weighing publishes equal ranges if none are published, so that
// the shards are held meanwhile.
func (r *Replica[C]) rebalance(ctx context.Context, lease *coordinationv1.Lease, current Boundaries, now time.Time) {
	name := BoundariesLeaseName(r.cfg.Name, r.count)
	r.mu.Lock()
	due := !r.weighing && (r.lastWeighed.IsZero() || now.Sub(r.lastWeighed) >= RebalancePeriod) &&
		(lease == nil || now.Sub(r.observed[name].at) >= RebalancePeriod)
	if due {
		r.weighing, r.lastWeighed = true, now
	}
	r.mu.Unlock()
	if !due {
		return
	}
	if lease != nil {
		lease = lease.DeepCopy()
	}
	r.done.Go(func() {
		defer func() {
			r.mu.Lock()
			r.weighing = false
			r.mu.Unlock()
		}()
		logger := klog.FromContext(ctx).WithValues("lease", name)
		weighing, cancel := context.WithTimeout(ctx, weighTimeout)
		defer cancel()
		weights, err := r.weigh(weighing)
		var split Boundaries
		switch {
		case err != nil && lease != nil:
			logger.Error(err, "Could not weigh the Foos of each namespace; the ranges stay as they are")
			return
		case err != nil:
			logger.Error(err, "Could not weigh the Foos of each namespace; equal ranges until the next weighing")
			split = published(EqualBoundaries(r.count).Starts)
		case lease == nil:
			split = SplitByWeight(r.count, weights)
		default:
			var ok bool
			if split, ok = rebalanced(current, weights); !ok {
				logger.V(2).Info("The shards' ranges split the Foos well enough",
					"imbalance", current.Imbalance(weights), "threshold", ImbalanceThreshold)
				return
			}
		}
		writing, cancel := context.WithTimeout(ctx, r.cfg.RenewDeadline)
		defer cancel()
		if lease == nil {
			lease = newLease(r.cfg.Namespace, name, r.cfg.Name, r.cfg.Identity, r.cfg.LeaseDuration, r.now())
			lease.Annotations = map[string]string{AnnotationBoundaries: split.annotation()}
			_, err = r.leases.Create(writing, lease, metav1.CreateOptions{})
		} else {
			hold(lease, r.cfg.Identity, r.cfg.LeaseDuration, r.now())
			if lease.Annotations == nil {
				lease.Annotations = map[string]string{}
			}
			lease.Annotations[AnnotationBoundaries] = split.annotation()
			_, err = r.leases.Update(writing, lease, metav1.UpdateOptions{})
		}
		if err != nil {
			logger.Error(err, "Could not publish the shards' boundaries")
			return
		}
		logger.Info("Published the shards' boundaries, split at the Foos' quantiles", "generation", split.Generation,
			"imbalance", split.Imbalance(weights), "was", current.Imbalance(weights), "threshold", ImbalanceThreshold)
	})
}

// weighTimeout bounds a weighing: a paged list of every Foo's metadata.
const weighTimeout = time.Minute
