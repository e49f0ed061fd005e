# Image of the sample-controller: a static Go binary on distroless.
#
#   docker build -t REGISTRY/sample-controller:TAG .
#
# Build stage. The Go version matches the go directive of go.mod.
FROM golang:1.26 AS builder
WORKDIR /src

# Dependencies first, in their own layer: it is rebuilt only when go.mod or
# go.sum change, not on every source change.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
# Static (no cgo, so it runs on a libc-less base), reproducible paths
# (-trimpath), without symbol table and DWARF (-s -w) to keep the image small.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/sample-controller .

# Runtime stage: no shell, no package manager; CA certificates and tzdata only.
FROM gcr.io/distroless/static:nonroot
COPY --from=builder /out/sample-controller /sample-controller
# The base image's "nonroot" user, numerically, so that runAsNonRoot can
# verify it without a passwd lookup.
USER 65532:65532
# Metrics (HTTPS, authenticated: -metrics-bind-address) and the /healthz and
# /readyz probes (plain HTTP: -health-probe-bind-address), the defaults.
EXPOSE 8443 8081
ENTRYPOINT ["/sample-controller"]
