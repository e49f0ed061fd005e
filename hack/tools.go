//go:build tools

// Package tools records build-time dependencies in go.mod so that
// hack/update-codegen.sh runs the code-generator at the pinned version.
package tools

import _ "k8s.io/code-generator"
