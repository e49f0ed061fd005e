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

package framework

// The kube-apiserver's audit log as evidence of who wrote what, and when:
// an end state cannot show that a replica which no longer held the Lease
// wrote for a moment (a paused leader woke and applied a stale
// replica count that the next write undid a moment later). The audit log can.
//
// The checks here read the JSON lines of the log (one audit.k8s.io/v1
// Event per line) that AuditPolicy asks for, and tell which replica sent
// each request: the controller names itself in its user agent,
// "sample-controller/<identity>" (its Lease client
// "sample-controller/<identity>/leader-election"), <identity> being the
// Lease's holderIdentity, <hostname>_<uuid>. A controller built before it
// did so is told apart by its credentials instead (user.username): a test
// of one must run each replica under a ServiceAccount of its own.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/pkg/replicas"
)

// AuditPolicy is the audit policy that records what the checks below read,
// and little else, so that an hour's soak still has a log of a manageable
// size: with their request and response bodies, the writes to the kinds a
// Foo owns (ownedRules) and to Foos (the scale and status subresources
// included); with the request
// body, the writes to the Leases of namespace leaseNamespace (every
// renewal, a line per retry period); with metadata alone, the lists and
// watches of Foos by ServiceAccounts, the controller's among them (how
// fresh each replica's Foo cache was: fooCacheFills); nothing of any other
// request.
func AuditPolicy(leaseNamespace string) string {
	return fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: RequestResponse
    verbs: ["create", "update", "patch", "delete"]
    resources:
%[4]s      - group: %[2]s
        resources: ["%[3]s", "%[3]s/status", "%[3]s/scale"]
  - level: Request
    verbs: ["create", "update"]
    namespaces: [%[1]q]
    resources:
      - group: coordination.k8s.io
        resources: ["leases"]
  - level: Metadata
    verbs: ["list", "watch"]
    userGroups: ["system:serviceaccounts"]
    resources:
      - group: %[2]s
        resources: ["%[3]s"]
  - level: None
`, leaseNamespace, samplecontroller.GroupName, samplecontroller.FooResource, ownedRules())
}

// ownedRules are the audit policy's resources of the kinds a Foo owns
// (desired.OwnedKinds): a kind listed there has its writes audited, and
// checked by the write fence's and chaos's checks, with no edit here.
func ownedRules() string {
	var rules strings.Builder
	for _, kind := range desired.OwnedKinds {
		resource := kind.Resource
		fmt.Fprintf(&rules, "      - group: %q\n        resources: [%q]\n", resource.Group, resource.Resource)
	}
	return rules.String()
}

// AuditEvent is what the checks read of an audit.k8s.io/v1 Event.
type AuditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject  json.RawMessage `json:"requestObject"`
	ResponseObject json.RawMessage `json:"responseObject"`
	// Received is when the API server received the request; Completed,
	// when it had answered (a write is committed by then).
	Received  time.Time `json:"requestReceivedTimestamp"`
	Completed time.Time `json:"stageTimestamp"`
}

// ReadAuditLog reads the completed requests (stage ResponseComplete), and
// the watches as they began (ResponseStarted), of an audit log in JSON
// lines, with the files kube-apiserver rotated out of it, sorted by
// completion (a watch's start by when it began), and counts the lines it
// could not read: a kube-apiserver killed in the middle of a line leaves
// it cut, and its next start appends to it.
func ReadAuditLog(path string) (events []AuditEvent, cut int, err error) {
	files, err := AuditLogFiles(path)
	if err != nil {
		return nil, 0, err
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, 0, err
		}
		more, n, err := ParseAuditLog(f)
		f.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", name, err)
		}
		events, cut = append(events, more...), cut+n
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].Completed.Before(events[j].Completed) })
	return events, cut, nil
}

// AuditLogFiles lists the audit log at path and, before it, oldest first,
// the files kube-apiserver rotated out of it: once the log reaches
// --audit-log-maxsize (100 MB by default) it is renamed to
// <name>-<UTC time>.<ext> in the same directory and a new one begun.
func AuditLogFiles(path string) ([]string, error) {
	ext := filepath.Ext(path)
	rotated, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return nil, err
	}
	sort.Strings(rotated) // the time stamps sort as text
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return append(rotated, path), nil
}

// ParseAuditLog is ReadAuditLog of an open log.
func ParseAuditLog(r io.Reader) (events []AuditEvent, cut int, err error) {
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for scanner.Scan() {
		if len(strings.TrimSpace(scanner.Text())) == 0 {
			continue
		}
		var e AuditEvent
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			cut++
			continue
		}
		if (e.Stage == "ResponseComplete" || e.Stage == "ResponseStarted" && e.Verb == "watch") && e.ObjectRef != nil {
			events = append(events, e)
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, cut, err
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].Completed.Before(events[j].Completed) })
	return events, cut, nil
}

// accepted reports whether the API server accepted the request (2xx).
func (e *AuditEvent) accepted() bool {
	return e.ResponseStatus != nil && e.ResponseStatus.Code >= 200 && e.ResponseStatus.Code < 300
}

func (e *AuditEvent) isWrite() bool {
	switch e.Verb {
	case "create", "update", "patch", "delete":
		return true
	}
	return false
}

// resource is the resource and subresource written: "deployments",
// "foos/status", ...
func (e *AuditEvent) resource() string {
	if e.ObjectRef.Subresource != "" {
		return e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
	}
	return e.ObjectRef.Resource
}

func (e *AuditEvent) String() string {
	code := 0
	if e.ResponseStatus != nil {
		code = e.ResponseStatus.Code
	}
	return fmt.Sprintf("%s %s %s/%s (%d) received %s by %q", e.Verb, e.resource(), e.ObjectRef.Namespace, e.ObjectRef.Name,
		code, e.Received.Format("15:04:05.000000"), e.UserAgent)
}

// controllerAgent is the controller's user agent, naming its replica:
// sample-controller/<hostname>_<uuid>, with /leader-election for the Lease
// client.
var controllerAgent = regexp.MustCompile(`^` + regexp.QuoteMeta(samplecontroller.ControllerName) +
	`/([^/ ]+_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})` +
	`(` + regexp.QuoteMeta(replicas.LeaseUserAgentSuffix) + `)?$`)

// fromController reports whether the request came from the controller
// (any user agent of sample-controller's own clients).
func (e *AuditEvent) fromController() bool {
	return strings.HasPrefix(e.UserAgent, samplecontroller.ControllerName+"/")
}

// Replica names the replica that sent the request: its Lease identity
// when its user agent carries one, else its user name.
func (e *AuditEvent) Replica() string {
	if m := controllerAgent.FindStringSubmatch(e.UserAgent); m != nil {
		return m[1]
	}
	return e.User.Username
}

// Leadership is one replica's hold of the Lease, as the audit log shows
// it.
type Leadership struct {
	Holder  string // the Lease's holderIdentity
	Replica string // who wrote it there (Replica of that request)
	// From is when the request that acquired the Lease was received; To,
	// when the request that set another holder (or none: a release) had
	// been answered, zero while it still leads.
	From, To time.Time
}

// Leaderships reads the holders of the Lease namespace/name from the
// accepted writes of it, in order.
func Leaderships(events []AuditEvent, namespace, name string) ([]Leadership, error) {
	var (
		out     []Leadership
		current string
	)
	for i := range events {
		e := &events[i]
		if e.ObjectRef.Resource != "leases" || e.ObjectRef.Namespace != namespace || e.ObjectRef.Name != name ||
			!e.accepted() || (e.Verb != "create" && e.Verb != "update") {
			continue
		}
		var lease struct {
			Spec struct {
				HolderIdentity string `json:"holderIdentity"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(e.RequestObject, &lease); err != nil {
			return nil, fmt.Errorf("request body of Lease write %s: %w", e, err)
		}
		holder := lease.Spec.HolderIdentity
		if holder == current {
			continue // a renewal
		}
		if len(out) > 0 && out[len(out)-1].To.IsZero() {
			out[len(out)-1].To = e.Completed
		}
		if holder != "" {
			out = append(out, Leadership{Holder: holder, Replica: e.Replica(), From: e.Received})
		}
		current = holder
	}
	return out, nil
}

// WritesOutsideLeadership lists the controller's accepted writes to
// Deployments and Foos that its replica sent while it did not hold the
// Lease: received before its acquisition was received, or after another
// replica's acquisition (or its own release) had been answered. The bounds
// favour the writer: a write in the instant a take-over commits is not
// counted.
func WritesOutsideLeadership(events []AuditEvent, leaderships []Leadership) []string {
	var out []string
	for i := range events {
		e := &events[i]
		if !e.fromController() || !e.accepted() || !e.isWrite() || !managedResource(e.ObjectRef.Resource) {
			continue
		}
		if !ledAt(leaderships, e.Replica(), e.Received) {
			out = append(out, fmt.Sprintf("%s: %s did not hold the Lease then (holder: %s)",
				e, e.Replica(), holderAt(leaderships, e.Received)))
		}
	}
	return out
}

// WritesOutsideShards is WritesOutsideLeadership for a sharded controller:
// it lists the accepted writes to Deployments and Foos that a replica sent
// while it did not hold the Lease of the shard the object's namespace is in
// (shardOf). leaderships are those of each shard's Lease, by shard.
func WritesOutsideShards(events []AuditEvent, leaderships [][]Leadership, shardOf func(namespace string) int) []string {
	var out []string
	for i := range events {
		e := &events[i]
		if !e.fromController() || !e.accepted() || !e.isWrite() || !managedResource(e.ObjectRef.Resource) {
			continue
		}
		shard := shardOf(e.ObjectRef.Namespace)
		if !ledAt(leaderships[shard], e.Replica(), e.Received) {
			out = append(out, fmt.Sprintf("%s: %s did not hold the Lease of shard %d then (holder: %s)",
				e, e.Replica(), shard, holderAt(leaderships[shard], e.Received)))
		}
	}
	return out
}

// WritesOutsideLeases is WritesOutsideShards for replicas of several
// shardings at once, as a rolling update that changes -shards runs them: it
// lists the accepted writes to Deployments and Foos whose replica held none
// of the Leases covering the object's namespace when the API server
// received the write. leaderships are each Lease's, by name; covering names
// the Leases whose holder may write for a namespace: the unsharded leader's,
// and the namespace's shard of each count.
func WritesOutsideLeases(events []AuditEvent, leaderships map[string][]Leadership,
	covering func(namespace string) []string) []string {
	var out []string
	for i := range events {
		e := &events[i]
		if !e.fromController() || !e.accepted() || !e.isWrite() || !managedResource(e.ObjectRef.Resource) {
			continue
		}
		names := covering(e.ObjectRef.Namespace)
		if len(heldBy(leaderships, names, e.Replica(), e.Received)) > 0 {
			continue
		}
		holders := make([]string, 0, len(names))
		for _, name := range names {
			holders = append(holders, name+": "+holderAt(leaderships[name], e.Received))
		}
		out = append(out, fmt.Sprintf("%s: %s held none of the Leases of its namespace then (%s)",
			e, e.Replica(), strings.Join(holders, "; ")))
	}
	return out
}

// WritesByTwoReplicas lists the pairs of accepted writes to Deployments and
// Foos of one namespace by two replicas, each inside a hold of its own of a
// Lease covering the namespace, where each write came while both holds
// lasted: two replicas writing for the same Foos at once. Holds that
// overlap are not enough: a replica may hold a Lease and not write yet (the
// unsharded leader waits for the shard holders to release theirs, and a
// Lease taken over overlaps the last holder's for the moment its request
// takes), so a write after the other's hold ended is a handover. A write
// outside every covering hold of its replica is WritesOutsideLeases'.
func WritesByTwoReplicas(events []AuditEvent, leaderships map[string][]Leadership,
	covering func(namespace string) []string) []string {
	type heldWrite struct {
		e       *AuditEvent
		replica string
		holds   []namedHold
	}
	byNamespace := map[string][]heldWrite{}
	for i := range events {
		e := &events[i]
		if !e.fromController() || !e.accepted() || !e.isWrite() || !managedResource(e.ObjectRef.Resource) {
			continue
		}
		ns := e.ObjectRef.Namespace
		if holds := heldBy(leaderships, covering(ns), e.Replica(), e.Received); len(holds) > 0 {
			byNamespace[ns] = append(byNamespace[ns], heldWrite{e: e, replica: e.Replica(), holds: holds})
		}
	}
	var out []string
	for _, ns := range slices.Sorted(maps.Keys(byNamespace)) {
		writes := byNamespace[ns]
		for i, a := range writes {
			for _, b := range writes[i+1:] {
				if a.replica == b.replica {
					continue
				}
			pair:
				for _, ha := range a.holds {
					for _, hb := range b.holds {
						if ha.covers(b.e.Received) && hb.covers(a.e.Received) {
							out = append(out, fmt.Sprintf("%s (holding %s) and %s (holding %s): each while both held",
								a.e, ha, b.e, hb))
							break pair
						}
					}
				}
			}
		}
	}
	return out
}

// namedHold is a Leadership of the Lease name.
type namedHold struct {
	name string
	Leadership
}

func (h namedHold) covers(at time.Time) bool {
	return !at.Before(h.From) && (h.To.IsZero() || at.Before(h.To))
}

func (h namedHold) String() string {
	return fmt.Sprintf("%s since %s", h.name, h.From.Format("15:04:05.000000"))
}

// heldBy are the holds by replica of the Leases names that cover at, with
// ledAt's rule: a Leadership it acquired, or of its own identity.
func heldBy(leaderships map[string][]Leadership, names []string, replica string, at time.Time) []namedHold {
	var holds []namedHold
	for _, name := range names {
		for _, l := range leaderships[name] {
			if h := (namedHold{name: name, Leadership: l}); (l.Replica == replica || l.Holder == replica) && h.covers(at) {
				holds = append(holds, h)
			}
		}
	}
	return holds
}

// LongestUnheld is the longest stretch of [from, to] in which none of the
// Leases names was held, counted from the first acquisition of one of them
// when that came after from: the longest the Foos of a namespace they cover
// had no replica that may reconcile them. A hold lasts until another
// holder's acquisition or a release was answered (Leaderships): a Lease left
// to expire counts as held until it is taken. Zero when there is no such
// stretch; all of [from, to] when none of the Leases was ever acquired.
func LongestUnheld(leaderships map[string][]Leadership, names []string, from, to time.Time) Window {
	var holds []Leadership
	for _, name := range names {
		holds = append(holds, leaderships[name]...)
	}
	if len(holds) == 0 {
		return Window{From: from, To: to}
	}
	slices.SortFunc(holds, func(a, b Leadership) int { return a.From.Compare(b.From) })
	heldUntil := from // the end of the holds so far, once one began
	if holds[0].From.After(heldUntil) {
		heldUntil = holds[0].From
	}
	var longest Window
	gap := func(start, end time.Time) {
		if end.After(to) {
			end = to
		}
		if end.Sub(start) > longest.To.Sub(longest.From) {
			longest = Window{From: start, To: end}
		}
	}
	for _, h := range holds {
		if !heldUntil.Before(to) {
			return longest
		}
		if h.From.After(heldUntil) {
			gap(heldUntil, h.From)
		}
		if h.To.IsZero() {
			return longest // held to the end
		}
		if h.To.After(heldUntil) {
			heldUntil = h.To
		}
	}
	if heldUntil.Before(to) {
		gap(heldUntil, to)
	}
	return longest
}

// ControllerWrites counts the accepted writes to Deployments and Foos by the
// controller, and the replicas that sent them: what the judges above judge.
func ControllerWrites(events []AuditEvent) (writes, writers int) {
	by := map[string]bool{}
	for i := range events {
		if e := &events[i]; e.fromController() && e.accepted() && e.isWrite() && managedResource(e.ObjectRef.Resource) {
			writes++
			by[e.Replica()] = true
		}
	}
	return writes, len(by)
}

// managedResource reports whether the controller writes resource: a kind a
// Foo owns, or Foos.
func managedResource(resource string) bool {
	for _, kind := range desired.OwnedKinds {
		if resource == kind.Resource.Resource {
			return true
		}
	}
	return resource == samplecontroller.FooResource
}

// ledAt reports whether replica led at the moment at: a Leadership it
// acquired, or of its own identity (whatever user agent the Lease client
// sent), covers it.
func ledAt(leaderships []Leadership, replica string, at time.Time) bool {
	for _, l := range leaderships {
		if (l.Replica == replica || l.Holder == replica) && !at.Before(l.From) && (l.To.IsZero() || at.Before(l.To)) {
			return true
		}
	}
	return false
}

func holderAt(leaderships []Leadership, at time.Time) string {
	holder := "nobody"
	for _, l := range leaderships {
		if !at.Before(l.From) && (l.To.IsZero() || at.Before(l.To)) {
			holder = fmt.Sprintf("%s, written by %s since %s", l.Holder, l.Replica, l.From.Format("15:04:05.000000"))
		}
	}
	return holder
}

// fooValue is a Foo's spec.replicas (nil: deleted) as one write set it.
// The write took effect at some moment between when it was received and
// when it was answered: a watcher may see it before the answer is out.
type fooValue struct {
	received, completed time.Time
	replicas            *int32
}

// StaleReplicaWrites lists the controller's accepted Deployment writes
// that set spec.replicas to a value its Foo no longer held: a value the
// Foo (through the Foo, its scale subresource, or any write answered with
// the Foo) had not had at any moment in the tolerance before the write was
// received. tolerance is the lag a legitimate leader may have: its cache
// learns of a Foo's change through a watch, a moment after the write.
//
// That lag has no bound while the API server refuses or stalls the
// controller's requests: a write built from the cache before a change
// arrives after it once client-go's retries of it are let through (a 429
// is retried after its Retry-After), and a watch refused is retried with a
// backoff, the cache catching up only once one is served. Writes received
// within one of excused, the windows in which the API server did, are not
// judged (a zombie's are still WritesOutsideLeadership's). After a window,
// until the replica's Foo informer watches again, its cache may hold the
// Foos as they were when the fault began, or as its last list of them
// showed them (a new leader's check:
// expectations.Foos.RememberChangedWhileStandby), and its writes are judged
// from then on (cacheSince).
func StaleReplicaWrites(events []AuditEvent, tolerance time.Duration, excused []Window) []string {
	history := fooHistory(events)
	fills := fooCacheFills(events)
	var out []string
	for i := range events {
		e := &events[i]
		if !e.fromController() || !e.accepted() || e.ObjectRef.Resource != desired.DeploymentsResource.Resource ||
			e.ObjectRef.Subresource != "" ||
			(e.Verb != "create" && e.Verb != "patch" && e.Verb != "update") ||
			within(excused, e.Received) {
			continue
		}
		var d struct {
			Metadata struct {
				OwnerReferences []struct {
					Kind       string `json:"kind"`
					Name       string `json:"name"`
					Controller *bool  `json:"controller"`
				} `json:"ownerReferences"`
			} `json:"metadata"`
			Spec struct {
				Replicas *int32 `json:"replicas"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(e.RequestObject, &d); err != nil || d.Spec.Replicas == nil {
			continue // no replicas in it (or no body): nothing to judge
		}
		owner := ""
		for _, ref := range d.Metadata.OwnerReferences {
			if ref.Kind == samplecontroller.FooKind && ref.Controller != nil && *ref.Controller {
				owner = ref.Name
			}
		}
		if owner == "" {
			out = append(out, fmt.Sprintf("%s: replicas %d for no Foo (no controller reference in the request)",
				e, *d.Spec.Replicas))
			continue
		}
		since := fills[e.Replica()].cacheSince(excused, e.Received)
		held := heldWithin(history[e.ObjectRef.Namespace+"/"+owner], since.Add(-tolerance), e.Received)
		if !containsReplicas(held, *d.Spec.Replicas) {
			window := fmt.Sprintf("in the %v before", tolerance)
			if since.Before(e.Received) {
				window = fmt.Sprintf("from %v before %s on (its Foo cache as of then: its watch not back after a fault)",
					tolerance, since.Format("15:04:05.000000"))
			}
			out = append(out, fmt.Sprintf("%s: replicas %d, but Foo %s held only %s %s",
				e, *d.Spec.Replicas, owner, describeValues(held), window))
		}
	}
	return out
}

// Window is a stretch of time, From and To included.
type Window struct {
	From, To time.Time
}

// reconnectBound is how long after a fault heals a replica's informer may
// still wait to list or watch again: client-go's reflector (v0.37.2) retries
// a refused list or watch after a backoff that doubles from 0.8 s up to
// 30 s, each wait lengthened by a random jitter of up to as much again.
const reconnectBound = 60 * time.Second

// fooCache is when a replica's Foo cache was filled afresh.
type fooCache struct {
	// watches are when each accepted watch of Foos it sent began. An
	// informer's watch either sends the whole list first (client-go's
	// WatchListClient, on by default in v0.37.2) or resumes from the last
	// resourceVersion its cache saw, sending what it missed first; an
	// informer that lists instead watches right after.
	watches []time.Time
	// lists are when each accepted list of Foos it sent was answered: a
	// new leader's check of its cache (pkg/expectations), which defers
	// the Foos its cache holds in an older version than the list.
	lists []time.Time
}

// fooCacheFills is each replica's fooCache, by Replica, in order.
func fooCacheFills(events []AuditEvent) map[string]*fooCache {
	fills := map[string]*fooCache{}
	for i := range events {
		e := &events[i]
		if e.ObjectRef.Resource != samplecontroller.FooResource || e.ObjectRef.Subresource != "" ||
			!e.fromController() || !e.accepted() {
			continue
		}
		c := fills[e.Replica()]
		if c == nil {
			c = &fooCache{}
			fills[e.Replica()] = c
		}
		switch {
		case e.Verb == "watch" && e.Stage == "ResponseStarted":
			c.watches = append(c.watches, e.Completed)
		case e.Verb == "list" && e.Stage == "ResponseComplete":
			c.lists = append(c.lists, e.Completed)
		}
	}
	for _, c := range fills {
		slices.SortFunc(c.watches, time.Time.Compare)
		slices.SortFunc(c.lists, time.Time.Compare)
	}
	return fills
}

// cacheSince is the moment from which the Foo cache of a replica that
// wrote at t held what the Foos held, less a watch's delay: t, unless t
// came after one of windows, a fault's, and before the last watch the
// replica began in reconnectBound after it. A fault that breaks the
// replica's watch leaves its cache as of then until its informer watches
// again, which client-go's backoff may put off well past the fault's end:
// the cache holds the Foos as they were when the fault began, or as its
// last list of them since showed them. A watch the fault did not break
// leaves no new watch, and t. The last watch counts, not the first: one
// begun as kube-apiserver starts may be closed at once.
func (c *fooCache) cacheSince(windows []Window, t time.Time) time.Time {
	since := t
	if c == nil {
		return since
	}
	for _, w := range windows {
		if !t.After(w.To) {
			continue
		}
		back := w.To
		for _, r := range c.watches {
			if r.After(w.To) && !r.After(w.To.Add(reconnectBound)) {
				back = r
			}
		}
		if t.After(back) {
			continue // the watch was back, or never broken
		}
		from := w.From
		for _, l := range c.lists {
			if !l.Before(w.From) && !l.After(t) {
				from = l
			}
		}
		if from.Before(since) {
			since = from
		}
	}
	return since
}

// within reports whether t falls in one of windows.
func within(windows []Window, t time.Time) bool {
	for _, w := range windows {
		if !t.Before(w.From) && !t.After(w.To) {
			return true
		}
	}
	return false
}

// fooHistory is each Foo's spec.replicas over time, from the responses to
// every accepted write of a Foo, its status or its scale.
func fooHistory(events []AuditEvent) map[string][]fooValue {
	history := map[string][]fooValue{}
	for i := range events {
		e := &events[i]
		if e.ObjectRef.Resource != samplecontroller.FooResource || !e.accepted() || !e.isWrite() {
			continue
		}
		key := e.ObjectRef.Namespace + "/" + e.ObjectRef.Name
		if e.Verb == "delete" {
			history[key] = append(history[key], fooValue{received: e.Received, completed: e.Completed})
			continue
		}
		// A Foo and a Scale both keep the count in spec.replicas.
		var obj struct {
			Spec struct {
				Replicas *int32 `json:"replicas"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(e.ResponseObject, &obj); err != nil || obj.Spec.Replicas == nil {
			continue
		}
		v := fooValue{received: e.Received, completed: e.Completed, replicas: obj.Spec.Replicas}
		// A status write cannot change spec.replicas. If it answers with
		// another count than the last write did, the write that set it is
		// missing from the log: a kube-apiserver killed after etcd took a
		// write and before it audited it. That write came after the last
		// one was answered, and the value may be held from then on.
		if prev := history[key]; e.ObjectRef.Subresource == "status" && len(prev) > 0 &&
			!sameReplicas(prev[len(prev)-1].replicas, v.replicas) {
			v.received = prev[len(prev)-1].completed
		}
		history[key] = append(history[key], v)
	}
	return history
}

func sameReplicas(a, b *int32) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// heldWithin returns the values a Foo may have had at some moment in
// [from, to], favouring the writer: a value from when the write that set
// it was received until the next write was answered.
func heldWithin(history []fooValue, from, to time.Time) []fooValue {
	var held []fooValue
	for i, v := range history {
		if v.received.After(to) {
			break
		}
		if i+1 < len(history) && history[i+1].completed.Before(from) {
			continue // replaced before the window
		}
		held = append(held, v)
	}
	return held
}

func containsReplicas(values []fooValue, count int32) bool {
	for _, v := range values {
		if v.replicas != nil && *v.replicas == count {
			return true
		}
	}
	return false
}

func describeValues(values []fooValue) string {
	if len(values) == 0 {
		return "nothing (no write of it in the audit log)"
	}
	var parts []string
	for _, v := range values {
		value := "deleted"
		if v.replicas != nil {
			value = fmt.Sprint(*v.replicas)
		}
		parts = append(parts, fmt.Sprintf("%s since %s", value, v.received.Format("15:04:05.000000")))
	}
	return strings.Join(parts, ", ")
}

// WritesTo lists the controller's accepted writes to one object.
func WritesTo(events []AuditEvent, resource, namespace, name string) []string {
	var out []string
	for i := range events {
		e := &events[i]
		if e.fromController() && e.accepted() && e.isWrite() && e.ObjectRef.Resource == resource &&
			e.ObjectRef.Namespace == namespace && e.ObjectRef.Name == name {
			out = append(out, e.String())
		}
	}
	return out
}
