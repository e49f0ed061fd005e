//go:build bench

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

package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// What the kernel knows about a process of the bench: its peak resident
// memory and the CPU time it used, read from /proc as the process runs.

// peakRSSKiB is the process's peak resident set size (VmHWM), in KiB.
func peakRSSKiB(pid int) (int64, error) {
	return statusKiB(pid, "VmHWM:")
}

// statusKiB reads a field in kB from /proc/<pid>/status.
func statusKiB(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// rssKiB is the process's resident set size now (VmRSS), in KiB.
func rssKiB(pid int) (int64, error) {
	return statusKiB(pid, "VmRSS:")
}

// rssSampler records the peak of another process's resident set size, for a
// window of time: VmHWM is the peak over the process's whole life.
type rssSampler struct {
	stopped chan struct{}
	wg      sync.WaitGroup
	first   int64
	peak    int64
	// began is when the first reading was taken, peakAfter when the peak
	// was, after it.
	began     time.Time
	peakAfter time.Duration
}

// startRSSSampler reads pid's resident set size now and then every
// interval until stop.
func startRSSSampler(pid int, interval time.Duration) (*rssSampler, error) {
	first, err := rssKiB(pid)
	if err != nil {
		return nil, err
	}
	s := &rssSampler{stopped: make(chan struct{}), first: first, peak: first, began: time.Now()}
	s.wg.Go(func() {
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-s.stopped:
				return
			case <-ticker.C:
				if kib, err := rssKiB(pid); err == nil && kib > s.peak {
					s.peak, s.peakAfter = kib, time.Since(s.began)
				}
			}
		}
	})
	return s, nil
}

// stop ends the sampling and returns the first reading and the peak, in KiB.
func (s *rssSampler) stop() (first, peak int64) {
	close(s.stopped)
	s.wg.Wait()
	return s.first, s.peak
}

// clockTicksPerSecond is USER_HZ, in which /proc reports CPU times: 100 on
// every Linux architecture Go supports.
const clockTicksPerSecond = 100

// cpuSeconds is the CPU time, user and system, the process has used so far.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted after its last closing parenthesis. utime and stime are fields 14
	// and 15 of the line, the 12th and 13th after it.
	stat := string(data)
	end := strings.LastIndexByte(stat, ')')
	fields := strings.Fields(stat[end+1:])
	if end < 0 || len(fields) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, data)
	}
	var ticks float64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return ticks / clockTicksPerSecond, nil
}
