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

package replicas

import (
	"context"
	"errors"
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The weighing lists the Foos' metadata a page of 500 at a time, and counts
// each namespace's over every page: two pages, the second asked for by the
// first's continue token.
func TestTheFoosAreWeighedByNamespaceOverEveryPage(t *testing.T) {
	page := func(cont string, namespaces ...string) *metav1.PartialObjectMetadataList {
		list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{Continue: cont}}
		for _, ns := range namespaces {
			list.Items = append(list.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns}})
		}
		return list
	}
	var asked []metav1.ListOptions
	weigh := countWith(func(_ context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
		asked = append(asked, opts)
		switch opts.Continue {
		case "":
			return page("page-2", "tenant-0", "tenant-1", "tenant-0"), nil
		case "page-2":
			return page("", "tenant-1", "tenant-2"), nil
		}
		return nil, errors.New("a third page asked for")
	})
	weights, err := weigh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"tenant-0": 2, "tenant-1": 2, "tenant-2": 1}; !maps.Equal(weights, want) {
		t.Errorf("weighed %v, want %v", weights, want)
	}
	if len(asked) != 2 || asked[0].Limit != 500 || asked[1].Continue != "page-2" {
		t.Errorf("listed with %+v, want a page of 500 and then the continue token page-2", asked)
	}
}
