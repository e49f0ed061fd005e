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

package serving

import (
	"context"
	"crypto/tls"
	"net/http"
)

// ServeWebhook serves handler over HTTPS on addr until ctx ends, with the
// certificate getCertificate returns at each handshake, so that a new one
// is served without a restart; "0" disables it. No client authentication:
// the API server sends no client certificate unless it is configured to, and
// a conversion is a function of what is sent alone: it reads nothing and
// reveals nothing.
func ServeWebhook(ctx context.Context, addr string, getCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error),
	handler http.Handler,
) error {
	return serveWithTLS(ctx, "webhook", addr, handler, &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: getCertificate,
		// HTTP/1.1, as the metrics server: the API server falls back to it,
		// and HTTP/2's server-side attack surface stays closed.
		NextProtos: []string{"http/1.1"},
	}, webhookLimits)
}
