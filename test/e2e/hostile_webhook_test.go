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

// The conversion webhook under attack: anyone who reaches a replica's port
// may POST to it, and what that costs the replica is bounded by
// pkg/conversionwebhook and pkg/serving, not by the caller.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/conversionwebhook"
)

const (
	// hostileFoos is how many Foos the reader lists in v1alpha1.
	hostileFoos = 300
	// peakRSSBound is what the controller's peak RSS must stay under:
	// the Deployment's memory limit (256Mi) less a margin of about 100
	// MiB, so that the bound holds with room for a larger baseline (more
	// Foos, more Deployments in the cache) than this test's.
	peakRSSBound = 160 << 20
	// webhookReadTimeout is pkg/serving's ReadTimeout of the webhook
	// server; a trickling body must be cut within it and this slack.
	webhookReadTimeout = 10 * time.Second
	trickleSlack       = 5 * time.Second
)

// A replica's webhook, with Foos in the cluster and a client listing them in
// v1alpha1 through the API server, is sent at once a review of 12 MiB of
// numbers (a body that once exhausted a replica: docs/failure-modes.md,
// Hostile callers), a review that trickles in a byte at a time, and many
// large reviews of Foos from many clients. The replica's peak RSS stays
// well under its memory limit, every list during and after the attack
// succeeds (the API server does not retry a conversion call: a review
// refused is a read failed), the trickling connection is cut by the read
// timeout, and nothing is lost.
func TestHostileConversionReviewsCannotExhaustAReplica(t *testing.T) {
	ns := newNamespace(t, "hostile-reviews")
	ensureStandardCRD(t)
	// Without GOMEMLIMIT, unlike the Deployment: the collector does not
	// tighten as the heap nears the limit, so the peak is the bounds'
	// alone.
	c := startController(t, "controller", controllerArgs(ns)...)
	waitControllerReady(t, c)
	names := createFoos(t, ns, "foo", hostileFoos)
	// Once the controller has written every Foo's status, a Foo is as large
	// as it stays at rest (Ready or still Progressing, its pods being
	// kwok's).
	eventually(t, 3*time.Minute, "every Foo's status", func(ctx context.Context) (bool, error) {
		list, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != hostileFoos {
			return false, err
		}
		for i := range list.Items {
			if readyCondition(&list.Items[i]) == nil {
				return false, nil
			}
		}
		return true, nil
	})
	logFooSize(t, ns)

	url := c.WebhookURL() + conversionwebhook.Path
	addr := strings.TrimPrefix(c.WebhookURL(), "https://")
	before, err := peakRSS(c.Pid())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()

	// The reader: v1alpha1 lists through the API server, which calls the
	// webhook, until the attack is over and three more have been read.
	attackDone := make(chan struct{})
	var readerWG sync.WaitGroup
	var listsDuring, listsAfter int
	var listErrors []string
	readerWG.Add(1)
	go func() {
		defer readerWG.Done()
		after := 0
		for after < 3 {
			over := false
			select {
			case <-attackDone:
				over = true
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			list, err := cluster.Sample.SamplecontrollerV1alpha1().Foos(ns).List(ctx, metav1.ListOptions{})
			cancel()
			switch {
			case err != nil:
				listErrors = append(listErrors, err.Error())
			case len(list.Items) != hostileFoos:
				listErrors = append(listErrors, fmt.Sprintf("listed %d Foos, want %d", len(list.Items), hostileFoos))
			}
			if over {
				after++
				listsAfter++
			} else {
				listsDuring++
			}
		}
	}()

	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the attacker trusts anything
		MaxIdleConnsPerHost: 64,
	}}
	defer client.CloseIdleConnections()
	var attack sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	count := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		outcomes[what]++
	}

	// (1) The review of numbers, four at once.
	for range 4 {
		attack.Add(1)
		go func() {
			defer attack.Done()
			code, body, err := post(client, url, numbersReview(12<<20))
			switch {
			case err != nil:
				count("numbers: connection closed before the answer")
			case code == http.StatusOK && strings.Contains(body, `"status":"Failure","message":"object 1: `):
				count("numbers: Failure at object 1")
			default:
				t.Errorf("the review of numbers: %d %.300s, want a Failure at object 1", code, body)
			}
		}()
	}

	// (2) A body that trickles a byte at a time; the server must cut it.
	var trickleTook time.Duration
	attack.Add(1)
	go func() {
		defer attack.Done()
		trickleTook = trickle(t, addr)
	}()

	// (3) Many clients each sending large reviews of Foos, as fast as the
	// webhook answers.
	large := largeReview(4 << 20)
	for range 16 {
		attack.Add(1)
		go func() {
			defer attack.Done()
			for range 3 {
				code, _, err := post(client, url, bytes.NewReader(large))
				if err != nil {
					count("large: " + err.Error())
					continue
				}
				count("large: " + strconv.Itoa(code))
			}
		}()
	}
	attack.Wait()
	close(attackDone)
	readerWG.Wait()
	t.Logf("attack over in %v: %v", time.Since(start).Round(time.Millisecond), outcomes)

	after, err := peakRSS(c.Pid())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("controller peak RSS (VmHWM): %.1f MiB before the attack, %.1f MiB after; bound %d MiB",
		float64(before)/(1<<20), float64(after)/(1<<20), peakRSSBound>>20)
	if after >= peakRSSBound {
		t.Errorf("peak RSS %.1f MiB, want under %d MiB", float64(after)/(1<<20), peakRSSBound>>20)
	}
	t.Logf("v1alpha1 lists of %d Foos: %d during the attack, %d after", hostileFoos, listsDuring, listsAfter)
	if len(listErrors) > 0 {
		t.Errorf("%d v1alpha1 lists failed, want none:\n%s", len(listErrors), strings.Join(listErrors, "\n"))
	}
	if listsDuring == 0 {
		t.Error("no v1alpha1 list was read during the attack")
	}
	t.Logf("trickling body cut after %v", trickleTook.Round(time.Millisecond))
	if trickleTook < webhookReadTimeout-time.Second || trickleTook > webhookReadTimeout+trickleSlack {
		t.Errorf("trickling body cut after %v, want after its read timeout of %v, within %v", trickleTook,
			webhookReadTimeout, trickleSlack)
	}
	if outcomes["large: 200"] == 0 {
		t.Errorf("no large review was converted: %v", outcomes)
	}

	// Nothing lost: the replica runs, and every Foo is as created.
	if c.Exited() {
		t.Fatal("the controller exited during the attack")
	}
	list, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]string{}
	for _, f := range list.Items {
		specs[f.Name] = f.Spec.Deployment.Name
	}
	for _, name := range names {
		if specs[name] != name {
			t.Errorf("Foo %s: spec.deployment.name %q, want %q", name, specs[name], name)
		}
	}
	if len(list.Items) != hostileFoos {
		t.Errorf("%d Foos, want %d", len(list.Items), hostileFoos)
	}
}

// amplifiedRSSSlack is how far above its idle peak the reviews built to
// amplify may take a replica's peak RSS: what pkg/conversionwebhook says the
// webhook may add to the heap, twice its 24 MiB budget (the decoder's
// buffer grows by doubling) and as much again of garbage. What a uid of
// 20 MiB of `<`, then a Foo with an annotation of it, took before the
// bounds on what it writes (issue 57): docs/failure-modes.md, Hostile
// reviews.
const amplifiedRSSSlack = 96 << 20

// A replica's webhook is sent the reviews that made it write far more than it
// read: a uid of `<` as long as a review may be, which JSON escapes as six
// bytes each, and a Foo carrying an annotation of 20 MiB of `<`; four of each
// at once, three times over. The uid is refused 400 and the large Foo a
// Failure naming it, each read no further than its bound; a Foo with an
// annotation of 2 MiB of `<`, under the bound, is answered exactly, at its
// own size. The replica's peak RSS stays within 96 MiB of its idle peak, and
// Foos are read in v1alpha1 through the API server afterwards as before.
func TestConversionReviewsBuiltToAmplifyAreBoundedByWhatTheyWrite(t *testing.T) {
	ns := newNamespace(t, "amplifying-reviews")
	ensureStandardCRD(t)
	// Without GOMEMLIMIT, unlike the Deployment, as the test above.
	c := startController(t, "controller", controllerArgs(ns)...)
	waitControllerReady(t, c)
	const foos = 3
	createFoos(t, ns, "foo", foos)
	// A read in v1alpha1 before the idle peak is taken, so that the peak
	// includes what a real conversion costs.
	waitV1alpha1Listed(t, ns)
	readV1alpha1Foos(t, ns, foos)
	idle, err := peakRSS(c.Pid())
	if err != nil {
		t.Fatal(err)
	}

	url := c.WebhookURL() + conversionwebhook.Path
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the attacker trusts anything
	}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	outcomes := map[string]int{}
	count := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		outcomes[what]++
	}
	// The webhook answers as soon as it has read enough to refuse, and
	// closes the connection rather than read the rest: a client still
	// sending may see the connection closed before it reads the answer.
	send := func(what string, review func() io.Reader, wantCode int, want string) {
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, body, err := post(client, url, review())
				switch {
				case err != nil:
					count(what + ": connection closed before the answer")
				case code == wantCode && body == want:
					count(what + ": " + strconv.Itoa(code))
				default:
					t.Errorf("%s: got %d %.300s, want %d %.300s", what, code, body, wantCode, want)
				}
			}()
		}
		wg.Wait()
	}
	for range 3 {
		send("a uid of <", func() io.Reader { return ltUIDReview(24 << 20) },
			http.StatusBadRequest, "a review's uid is at most 256 bytes\n")
		send("an annotation of 20 MiB of <", func() io.Reader { return ltAnnotationReview(20 << 20) }, http.StatusOK,
			`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","response":{"uid":"lt-annotation",`+
				`"convertedObjects":null,"result":{"metadata":{},"status":"Failure",`+
				`"message":"object 1: larger than 3145728 bytes, the most the API server stores"}}}`+"\n")
	}
	t.Logf("outcomes: %v", outcomes)
	if outcomes["a uid of <: 400"] == 0 || outcomes["an annotation of 20 MiB of <: 200"] == 0 {
		t.Errorf("no refusal of each was read: %v", outcomes)
	}

	// Under the bound, the Foo is converted and answered in as many bytes
	// as it was sent in, but for the moved Deployment's name.
	note := strings.Repeat("<", 2<<20)
	code, body, err := post(client, url, ltAnnotationReview(len(note)))
	want := `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","response":{"uid":"lt-annotation",` +
		`"convertedObjects":[{"kind":"Foo","apiVersion":"samplecontroller.k8s.io/v1alpha1","metadata":{"name":"lt",` +
		`"namespace":"attack","annotations":{"note":"` + note + `"}},"spec":{"deploymentName":"d"},` +
		`"status":{"availableReplicas":0}}],"result":{"metadata":{},"status":"Success"}}}` + "\n"
	if err != nil || code != http.StatusOK || body != want {
		t.Errorf("an annotation of 2 MiB of <: got %d, %d bytes (%.200s…), %v; want 200, %d bytes", code, len(body),
			body, err, len(want))
	}

	after, err := peakRSS(c.Pid())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("controller peak RSS (VmHWM): %.1f MiB idle, %.1f MiB after the reviews; bound %.1f MiB",
		float64(idle)/(1<<20), float64(after)/(1<<20), float64(idle+amplifiedRSSSlack)/(1<<20))
	if after-idle >= amplifiedRSSSlack {
		t.Errorf("peak RSS went from %.1f to %.1f MiB, want less than %d MiB more", float64(idle)/(1<<20),
			float64(after)/(1<<20), amplifiedRSSSlack>>20)
	}
	if c.Exited() {
		t.Fatal("the controller exited during the reviews")
	}
	readV1alpha1Foos(t, ns, foos)
}

// waitV1alpha1Listed waits until the API server lists the Foos of ns in
// v1alpha1. Its watch cache of the Foos in v1alpha1 starts over whenever it
// could not convert an event through the webhook (between tests no replica
// serves it, while the last test's Foos are deleted) and whenever the CRD's
// spec changes. Until the new cache has read every Foo of the cluster from
// etcd, each converted by the webhook, a list is answered 429 "storage is
// (re)initializing" (KEP-4568), and client-go gives up after ten tries.
// That wait is the API server's; any other error fails the test.
func waitV1alpha1Listed(t *testing.T, ns string) {
	t.Helper()
	eventually(t, convergeTimeout, "the Foos' v1alpha1 list cache", func(ctx context.Context) (bool, error) {
		_, err := cluster.Sample.SamplecontrollerV1alpha1().Foos(ns).List(ctx, metav1.ListOptions{})
		switch {
		case apierrors.IsTooManyRequests(err):
			t.Logf("listing Foos in v1alpha1: %v", err)
			return false, nil
		case err != nil:
			t.Fatalf("listing Foos in v1alpha1: %v", err)
		}
		return true, nil
	})
}

// readV1alpha1Foos lists the Foos of ns in v1alpha1 and gets the first,
// through the API server, which calls the webhook for each.
func readV1alpha1Foos(t *testing.T, ns string, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alpha := cluster.Sample.SamplecontrollerV1alpha1().Foos(ns)
	list, err := alpha.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing Foos in v1alpha1: %v", err)
	}
	if len(list.Items) != want {
		t.Fatalf("listed %d Foos in v1alpha1, want %d", len(list.Items), want)
	}
	foo, err := alpha.Get(ctx, "foo-000", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting foo-000 in v1alpha1: %v", err)
	}
	if foo.Spec.DeploymentName != "foo-000" {
		t.Errorf("foo-000 in v1alpha1: spec.deploymentName %q, want foo-000", foo.Spec.DeploymentName)
	}
}

// ltUIDReview is a review of size bytes whose uid is `<` throughout, made
// as it is sent.
func ltUIDReview(size int) io.Reader {
	head := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"`
	tail := `","desiredAPIVersion":"samplecontroller.k8s.io/v1alpha1","objects":[]}}`
	return io.MultiReader(strings.NewReader(head), io.LimitReader(ltReader{}, int64(size-len(head)-len(tail))),
		strings.NewReader(tail))
}

// ltAnnotationReview is a review of one v1beta1 Foo to convert to v1alpha1
// whose annotation is n bytes of `<`, made as it is sent.
func ltAnnotationReview(n int) io.Reader {
	head := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"lt-annotation",` +
		`"desiredAPIVersion":"samplecontroller.k8s.io/v1alpha1","objects":[{"apiVersion":"samplecontroller.k8s.io/v1beta1",` +
		`"kind":"Foo","metadata":{"name":"lt","namespace":"attack","annotations":{"note":"`
	tail := `"}},"spec":{"deployment":{"name":"d"}},"status":{"availableReplicas":0}}]}}`
	return io.MultiReader(strings.NewReader(head), io.LimitReader(ltReader{}, int64(n)), strings.NewReader(tail))
}

type ltReader struct{}

func (ltReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '<'
	}
	return len(p), nil
}

// logFooSize logs how large a Foo is as the API server sends it, and
// a list of all of them at the scales make bench runs: what a review of a
// v1alpha1 list of every Foo weighs (docs/performance.md).
func logFooSize(t *testing.T, ns string) {
	t.Helper()
	raw, err := cluster.Sample.SamplecontrollerV1beta1().RESTClient().Get().
		Namespace(ns).Resource("foos").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	per := float64(len(raw)) / hostileFoos
	t.Logf("a Foo with its status, as the API server lists it: %.0f bytes; a review of 1,000: %.1f MiB, of 10,000: %.1f MiB",
		per, per*1000/(1<<20), per*10000/(1<<20))
}

// post POSTs body to url and returns the status and the response.
func post(client *http.Client, url string, body io.Reader) (int, string, error) {
	resp, err := client.Post(url, "application/json", body)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, string(out), err
}

// numbersReview is a review of size bytes whose objects are 1,1,1,…, made as
// it is sent.
func numbersReview(size int) io.Reader {
	head := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"numbers",` +
		`"desiredAPIVersion":"samplecontroller.k8s.io/v1alpha1","objects":[`
	tail := `1]}}`
	ones := io.LimitReader(onesReader{}, int64(size-len(head)-len(tail)))
	return io.MultiReader(strings.NewReader(head), ones, strings.NewReader(tail))
}

type onesReader struct{}

func (onesReader) Read(p []byte) (int, error) {
	n := len(p) &^ 1
	for i := 0; i < n; i += 2 {
		p[i], p[i+1] = '1', ','
	}
	return n, nil
}

// largeReview is a review of v1beta1 Foos to convert to v1alpha1, of about
// size bytes: legitimate in every way but its sender.
func largeReview(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"large",` +
		`"desiredAPIVersion":"samplecontroller.k8s.io/v1alpha1","objects":[`)
	note := strings.Repeat("n", 1000)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"apiVersion":"samplecontroller.k8s.io/v1beta1","kind":"Foo","metadata":{"name":"foo-%d",`+
			`"namespace":"attack","uid":"uid-%d","annotations":{"note":%q}},"spec":{"deployment":{"name":"web-%d"},`+
			`"replicas":1},"status":{"availableReplicas":1}}`, i, i, note, i)
	}
	b.WriteString(`]}}`)
	return b.Bytes()
}

// trickle sends a review's headers to the webhook at addr, then its body a
// byte every 100 ms, and returns how long after connecting the server
// closed the connection (0 if it had not after a minute).
func trickle(t *testing.T, addr string) time.Duration {
	start := time.Now()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the attacker trusts anything
	if err != nil {
		t.Errorf("trickle: %v", err)
		return 0
	}
	defer conn.Close()
	closed := make(chan time.Duration, 1)
	go func() {
		_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
		_, err := io.Copy(io.Discard, bufio.NewReader(conn))
		if err != nil && !strings.Contains(err.Error(), "reset") {
			closed <- 0
			return
		}
		closed <- time.Since(start)
	}()
	_, _ = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		conversionwebhook.Path, addr, 1<<20)
	// A review that stays valid JSON however far it has come: its head,
	// then blanks between the objects.
	body := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"trickle",` +
		`"desiredAPIVersion":"samplecontroller.k8s.io/v1alpha1","objects":[`
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case took := <-closed:
			return took
		case <-tick.C:
			b := byte(' ')
			if i < len(body) {
				b = body[i]
			}
			if _, err := conn.Write([]byte{b}); err != nil {
				return <-closed
			}
		}
	}
}

// peakRSS is a process's peak resident set size (VmHWM), in bytes.
func peakRSS(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kib << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
