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

package conversionwebhook

import "testing"

func TestSelfWaitWaitsForTheFooCacheOnlyWhileNothingIsStoredInAnotherVersion(t *testing.T) {
	for _, tc := range []struct {
		name           string
		storedVersions []string
		fooSynced      bool
		othersSynced   bool
		want           bool
	}{
		{name: "all synced", storedVersions: []string{"v1beta1"}, fooSynced: true, othersSynced: true, want: true},
		{name: "Foo cache unsynced, all stored in the listed version", storedVersions: []string{"v1beta1"},
			othersSynced: true, want: false},
		{name: "Foo cache unsynced, some may be stored in v1alpha1", storedVersions: []string{"v1alpha1", "v1beta1"},
			othersSynced: true, want: true},
		{name: "Foo cache unsynced, the CRD not cached yet", storedVersions: nil, othersSynced: true, want: false},
		{name: "Deployment cache unsynced, some stored in v1alpha1", storedVersions: []string{"v1alpha1", "v1beta1"},
			fooSynced: true, want: false},
		{name: "nothing synced, some stored in v1alpha1", storedVersions: []string{"v1alpha1", "v1beta1"}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewSelfWait("v1beta1",
				func() bool { return tc.fooSynced },
				func() []string { return tc.storedVersions },
				func() bool { return tc.othersSynced })
			if got := w.Synced(); got != tc.want {
				t.Errorf("Synced() = %v, want %v", got, tc.want)
			}
		})
	}
}
