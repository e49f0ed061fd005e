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

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// The controller serves /metrics only to callers the API server
// authenticates and authorizes. The suite scrapes as Prometheus does in a
// cluster: as a ServiceAccount bound to the metrics-reader ClusterRole that
// artifacts/deploy ships.
const (
	// MetricsReaderClusterRoleFile is the shipped ClusterRole allowing get
	// on /metrics, relative to the repository root.
	MetricsReaderClusterRoleFile = "artifacts/deploy/metrics-reader-clusterrole.yaml"
	// MetricsReaderClusterRole is the name of that ClusterRole.
	MetricsReaderClusterRole = samplecontroller.ControllerName + "-metrics-reader"
	// ScraperNamespace and ScraperServiceAccount name the suite's scraper;
	// its ClusterRoleBinding has the ServiceAccount's name.
	ScraperNamespace      = "e2e-metrics-scraper"
	ScraperServiceAccount = "metrics-scraper"
)

// metricsTokens maps each controller's metrics URL, as MetricsURL returns
// it, to the token its cluster's scraper sends, so that ScrapeURL, given
// only a URL, scrapes every controller with the token of the cluster it
// runs against (a test may run several clusters).
var metricsTokens sync.Map

// ensureMetricsScraper sets up the cluster's scraper once: it applies the
// shipped metrics-reader ClusterRole, creates the ServiceAccount, binds the
// ClusterRole to it, and returns a token of it. A failure is returned, and
// the next call tries again.
func (c *Cluster) ensureMetricsScraper(ctx context.Context) (string, error) {
	c.scraperMu.Lock()
	defer c.scraperMu.Unlock()
	if c.scraperToken != "" {
		return c.scraperToken, nil
	}
	out, err := c.Kubectl("", "apply", "-f", MetricsReaderClusterRoleFile)
	if err != nil {
		return "", err
	}
	if !strings.Contains(out, "clusterrole.rbac.authorization.k8s.io/"+MetricsReaderClusterRole+" ") {
		return "", fmt.Errorf("kubectl apply -f %s did not apply ClusterRole %s: %s",
			MetricsReaderClusterRoleFile, MetricsReaderClusterRole, out)
	}
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ScraperNamespace}}
	_, err = c.Kube.CoreV1().Namespaces().Create(ctx, namespace, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	if err := c.BindMetricsReader(ctx, ScraperServiceAccount, ScraperNamespace, ScraperServiceAccount); err != nil {
		return "", err
	}
	token, err := c.ServiceAccountToken(ctx, ScraperNamespace, ScraperServiceAccount, samplecontroller.MetricsAudience)
	if err != nil {
		return "", err
	}
	c.scraperToken = token
	return token, nil
}

// removeMetricsScraper deletes the scraper's ClusterRoleBinding and
// Namespace, if set up. The ClusterRole stays: it is part of
// artifacts/deploy, which the cluster may have installed.
func (c *Cluster) removeMetricsScraper(ctx context.Context) error {
	c.scraperMu.Lock()
	defer c.scraperMu.Unlock()
	if c.scraperToken == "" {
		return nil
	}
	c.scraperToken = ""
	for _, err := range []error{
		c.Kube.RbacV1().ClusterRoleBindings().Delete(ctx, ScraperServiceAccount, metav1.DeleteOptions{}),
		c.Kube.CoreV1().Namespaces().Delete(ctx, ScraperNamespace, metav1.DeleteOptions{}),
	} {
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// BindMetricsReader binds the metrics-reader ClusterRole to the
// ServiceAccount ns/sa with a ClusterRoleBinding named name (kept if it
// exists), and waits until the API server's authorizer allows the
// ServiceAccount get on /metrics. Only then may it scrape: a controller that
// asked before the binding took effect would keep the denial cached for 10 s.
func (c *Cluster) BindMetricsReader(ctx context.Context, name, ns, sa string) error {
	_, err := c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MetricsReaderClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	user := serviceaccount.MakeUsername(ns, sa)
	return Poll(ctx, 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
		review, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:                  user,
				Groups:                serviceaccount.MakeGroupNames(ns),
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		if !review.Status.Allowed {
			return false, fmt.Errorf("%s may not get /metrics yet: %s", user, review.Status.Reason)
		}
		return true, nil
	})
}

// ServiceAccountToken creates the ServiceAccount ns/name if it does not
// exist, and returns a token of it valid for a day (a TokenRequest, what
// "kubectl create token" sends), for audiences (none: the API server's, as
// kubectl create token without --audience). The controller's /metrics takes
// only a token for samplecontroller.MetricsAudience.
func (c *Cluster) ServiceAccountToken(ctx context.Context, ns, name string, audiences ...string) (string, error) {
	accounts := c.Kube.CoreV1().ServiceAccounts(ns)
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := accounts.Create(ctx, account, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	request, err := accounts.CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 60 * 60), Audiences: audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token of ServiceAccount %s/%s: %w", ns, name, err)
	}
	return request.Status.Token, nil
}

// PodMetricsURL is the /metrics URL of a controller's pod on the real node,
// which the host reaches through the node's bridge, for ScrapeURL to scrape
// as the cluster's metrics scraper (as MetricsURL is a local controller's).
func (c *Cluster) PodMetricsURL(ctx context.Context, pod *corev1.Pod, port int) (string, error) {
	if pod.Status.PodIP == "" {
		return "", fmt.Errorf("pod %s/%s has no IP yet", pod.Namespace, pod.Name)
	}
	token, err := c.ensureMetricsScraper(ctx)
	if err != nil {
		return "", err
	}
	url := "https://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)) + "/metrics"
	metricsTokens.Store(url, token)
	return url, nil
}
