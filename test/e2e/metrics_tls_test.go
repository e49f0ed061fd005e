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
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// ensureNamespace creates the namespace name unless it exists.
func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := cluster.Kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// verifiedMetricsCA waits until the ConfigMap the controller c keeps in its
// webhook namespace ns holds the Foo CRD's caBundle, and c's metrics server
// presents a certificate a client given that bundle verifies for the
// metrics Service's name in ns, as a scraper with ca_file and server_name
// does; it returns the bundle.
func verifiedMetricsCA(t *testing.T, metricsURL, ns string) []byte {
	t.Helper()
	addr := strings.TrimSuffix(strings.TrimPrefix(metricsURL, "https://"), "/metrics")
	serverName := samplecontroller.MetricsServiceName + "." + ns + ".svc"
	crdClient := crds(t)
	var bundle []byte
	eventually(t, convergeTimeout, "a metrics certificate verified with ConfigMap "+ns+"/"+samplecontroller.MetricsCAConfigMapName,
		func(ctx context.Context) (bool, error) {
			cm, err := cluster.Kube.CoreV1().ConfigMaps(ns).Get(ctx, samplecontroller.MetricsCAConfigMapName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			crd, err := crdClient.Get(ctx, samplecontroller.FooCRDName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			encoded, _, _ := unstructured.NestedString(crd.Object, caBundlePath...)
			caBundle, err := base64.StdEncoding.DecodeString(encoded)
			if err != nil {
				return false, err
			}
			bundle = []byte(cm.Data[samplecontroller.MetricsCAKey])
			if string(bundle) != string(caBundle) {
				return false, fmt.Errorf("the ConfigMap holds %d bytes, the CRD's caBundle %d", len(bundle), len(caBundle))
			}
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM(bundle) {
				return false, fmt.Errorf("the ConfigMap's %s holds no certificate", samplecontroller.MetricsCAKey)
			}
			dialer := &tls.Dialer{NetDialer: &net.Dialer{}, Config: &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}}
			conn, err := dialer.DialContext(ctx, "tcp", addr)
			if err != nil {
				return false, fmt.Errorf("TLS to %s verified for %s: %w", addr, serverName, err)
			}
			_ = conn.Close()
			return true, nil
		})
	return bundle
}
