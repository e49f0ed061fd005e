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

// Package signals turns SIGINT and SIGTERM into context cancellation, the way
// a controller wants to shut down: the first signal asks for a graceful stop,
// a second one exits at once.
package signals

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// shutdownSignals are the signals that ask the process to stop: Ctrl-C at a
// terminal, and what the kubelet sends before it kills a container.
var shutdownSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// onlyOneSignalHandler makes a second call panic: two handlers would race for
// the same signals.
var onlyOneSignalHandler = make(chan struct{})

// SetupSignalHandler returns a context that is cancelled on the first SIGINT
// or SIGTERM. On a second signal the process exits with status 1 without
// waiting for anything.
func SetupSignalHandler() context.Context {
	close(onlyOneSignalHandler) // panics when called twice

	ctx, cancel := context.WithCancel(context.Background())
	c := make(chan os.Signal, 2)
	signal.Notify(c, shutdownSignals...)
	go func() {
		<-c
		cancel()
		<-c
		os.Exit(1)
	}()
	return ctx
}
