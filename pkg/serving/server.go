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

// Package serving runs the controller's three HTTP servers: the metrics
// server (Prometheus metrics and, when asked, Go's profiles; by default over
// HTTPS, each request authenticated and authorized by the API server, with a
// certificate reloaded when its files change), the probe server (/healthz
// and /readyz) and the conversion webhook's (webhook.go). Each has read,
// write and idle timeouts and a bound on connections (limits.go). None
// touches the controller: main.go wires them to it.
package serving

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// Check is one named check behind /healthz or /readyz.
type Check struct {
	Name  string
	Check func(*http.Request) error
}

// MetricsOptions configure the metrics server.
type MetricsOptions struct {
	// BindAddress is where to listen; "0" disables the server.
	BindAddress string
	// Secure serves HTTPS to the callers the API server authenticates and
	// authorizes; false serves plain HTTP to anyone.
	Secure bool
	// CertFile and KeyFile are the serving certificate, reloaded when they
	// change; both empty: a self-signed one generated at start.
	CertFile, KeyFile string
	// Profiling also serves Go's profiles under /debug/pprof/.
	Profiling bool
}

// healthHandler answers 200 "ok" when every check passes, else 500 naming the
// failing checks, like the probes of Kubernetes' own components.
func healthHandler(checks []Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var failed []string
		for _, c := range checks {
			if err := c.Check(r); err != nil {
				failed = append(failed, fmt.Sprintf("[-]%s failed: %v", c.Name, err))
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if len(failed) > 0 {
			w.WriteHeader(http.StatusInternalServerError)
			for _, f := range failed {
				fmt.Fprintln(w, f)
			}
			return
		}
		fmt.Fprint(w, "ok")
	})
}

// metricsHandler serves the Prometheus registry the controller and client-go
// report to at /metrics and, with profiling, Go's runtime profiles under
// /debug/pprof/, as kube-controller-manager's --profiling does. Both sit
// behind whatever guards the metrics server (see ServeMetrics), each path
// authorized on its own.
func metricsHandler(profiling bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", legacyregistry.Handler())
	if profiling {
		// Registered here, on the one mux the metrics server serves.
		// Importing net/http/pprof also registers these handlers on
		// http.DefaultServeMux, but no server of this binary serves that
		// mux, so they are reachable only here and only when asked for.
		// Index serves the named profiles too (heap, goroutine, allocs,
		// block, mutex, threadcreate): /debug/pprof/heap is Index.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// Watchdog is what liveness asks about leader election: client-go's
// leaderelection.HealthzAdaptor, or a sharded replica's (replicas.Work.Liveness).
type Watchdog interface {
	Check(*http.Request) error
}

// Probes are the controller's checks. Liveness fails when, with leader
// election, a leader stops renewing its Lease, or a sharded replica's loops
// stop (watchdog); readiness waits for synced, the informer caches, so a
// standby is ready as soon as it could take over, and for whatever else more
// checks (the conversion webhook's).
func Probes(
	leaderElection bool, watchdog Watchdog, synced func() bool, more ...Check,
) (liveness, readiness []Check) {
	liveness = []Check{{Name: "ping", Check: func(*http.Request) error { return nil }}}
	if leaderElection {
		liveness = append(liveness, Check{Name: "leaderElection", Check: watchdog.Check})
	}
	readiness = append(make([]Check, 0, 1+len(more)), Check{Name: "informer-sync", Check: func(*http.Request) error {
		if !synced() {
			return errors.New("informer caches not synced")
		}
		return nil
	}})
	return liveness, append(readiness, more...)
}

// ServeProbes serves /healthz (liveness) and /readyz (readiness) on addr over
// plain HTTP until ctx ends; "0" disables it.
func ServeProbes(ctx context.Context, addr string, liveness, readiness []Check) error {
	return serve(ctx, "probes", addr, probesHandler(liveness, readiness), probeLimits)
}

// probesHandler serves /healthz (liveness) and /readyz (readiness).
func probesHandler(liveness, readiness []Check) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/healthz", healthHandler(liveness))
	mux.Handle("/readyz", healthHandler(readiness))
	return mux
}

// serve listens on addr and serves handler over plain HTTP until ctx ends.
// An address of "0" disables the server. It returns once listening, so that a
// port in use is an error at start, not a log line later.
func serve(ctx context.Context, name, addr string, handler http.Handler, lim limits) error {
	return serveWithTLS(ctx, name, addr, handler, nil, lim)
}

// serveWithTLS is serve over HTTPS when tlsConfig is not nil.
func serveWithTLS(
	ctx context.Context, name, addr string, handler http.Handler, tlsConfig *tls.Config, lim limits,
) error {
	if serverDisabled(addr) {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s server: %w", name, err)
	}
	serveOn(ctx, name, ln, handler, tlsConfig, lim)
	return nil
}

// serveOn serves handler on ln until ctx ends, within lim.
func serveOn(
	ctx context.Context, name string, ln net.Listener, handler http.Handler, tlsConfig *tls.Config, lim limits,
) {
	ln = limitConnections(ln, lim)
	scheme := "http"
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
		scheme = "https"
	}
	logger := klog.FromContext(ctx).WithValues("server", name, "address", ln.Addr().String(), "scheme", scheme)
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: lim.readHeader,
		ReadTimeout:       lim.read,
		WriteTimeout:      lim.write,
		IdleTimeout:       lim.idle,
		// Handlers log with the server's logger (klog.FromContext).
		BaseContext: func(net.Listener) context.Context { return klog.NewContext(context.Background(), logger) },
	}
	if lim.shed {
		trackServing(srv)
	}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	go func() {
		logger.Info("Serving")
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Server stopped")
		}
	}()
}

// serverDisabled reports whether a bind address turns its server off.
func serverDisabled(addr string) bool {
	return addr == "0" || addr == ""
}

// ServeMetrics serves /metrics (and, with Profiling, /debug/pprof/) until
// ctx ends: when Secure, over HTTPS to the callers the API server
// authenticates and authorizes (see auth.go), else over plain HTTP to anyone.
// The reviews are sent with the controller's own credentials, built from
// kubeCfg. signed, when not nil, returns the certificate the controller's CA
// signed for the metrics Service (nil until there is one), served instead
// of the self-signed one when CertFile and KeyFile are empty. It returns once
// listening, so that a port in use is an error at start.
func ServeMetrics(ctx context.Context, o MetricsOptions, kubeCfg *rest.Config, signed func() *tls.Certificate) error {
	logger := klog.FromContext(ctx)
	if serverDisabled(o.BindAddress) {
		if o.Profiling {
			// Profiles have no server of their own: say so rather than
			// leave the operator wondering why /debug/pprof/ is not there.
			logger.Info("Profiling is not served: profiling needs the metrics server, which is disabled")
		}
		return nil
	}
	if o.Profiling {
		logger.Info("Serving Go profiles at /debug/pprof/ on the metrics server")
	}
	if !o.Secure {
		logger.Info("Metrics are served over plain HTTP to anyone, without authentication")
		return serve(ctx, "metrics", o.BindAddress, metricsHandler(o.Profiling), metricsLimits)
	}
	tlsConfig, err := servingTLSConfig(ctx, o.CertFile, o.KeyFile, signed)
	if err != nil {
		return fmt.Errorf("metrics server: %w", err)
	}
	limiter := newReviewLimiter(MetricsReviewsInFlight, MetricsReviewQPS, MetricsReviewBurst)
	authClient, err := kubernetes.NewForConfig(metricsAuthClientConfig(kubeCfg, limiter))
	if err != nil {
		return fmt.Errorf("building metrics auth clientset: %w", err)
	}
	authn, authz, err := newMetricsAuth(authClient)
	if err != nil {
		return err
	}
	handler := withDelegatedAuth(authn, authz, metricsAudiences, metricsHandler(o.Profiling))
	return serveWithTLS(ctx, "metrics", o.BindAddress, handler, tlsConfig, metricsLimits)
}
