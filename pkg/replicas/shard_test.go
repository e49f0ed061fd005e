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
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

func TestShardSelectorsSplitTheHashSpaceAsTheAPIServerWritesIt(t *testing.T) {
	for _, tc := range []struct {
		shard Shard
		want  string
	}{
		{Shard{Index: 0, Count: 16}, "shardRange(object.metadata.namespace, '0x0000000000000000', '0x1000000000000000')"},
		{Shard{Index: 15, Count: 16}, "shardRange(object.metadata.namespace, '0xf000000000000000', '0x10000000000000000')"},
		{Shard{Index: 0, Count: 3}, "shardRange(object.metadata.namespace, '0x0000000000000000', '0x5555555555555555')"},
		{Shard{Index: 1, Count: 3}, "shardRange(object.metadata.namespace, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')"},
		{Shard{Index: 2, Count: 3}, "shardRange(object.metadata.namespace, '0xaaaaaaaaaaaaaaaa', '0x10000000000000000')"},
	} {
		if got := tc.shard.Selector().String(); got != tc.want {
			t.Errorf("shard %s: selector %q, want %q", tc.shard, got, tc.want)
		}
	}
}

// The hashes are FNV-1a 64 of the namespace, worked out apart from the code.
func TestANamespaceIsInTheShardItsHashFallsIn(t *testing.T) {
	for _, tc := range []struct {
		namespace    string
		count, index int
	}{
		{"shop", 3, 0},    // 0x46dc5e18e28e2409
		{"prod", 3, 1},    // 0x85729c0e3537be14
		{"default", 3, 2}, // 0xebada5168620c5fe
		{"shop", 16, 4},
		{"prod", 16, 8},
		{"default", 16, 14},
		{"default", 1, 0},
	} {
		if got := Of(tc.namespace, tc.count); got != (Shard{Index: tc.index, Count: tc.count}) {
			t.Errorf("Of(%q, %d) = %s, want %d-of-%d", tc.namespace, tc.count, got, tc.index, tc.count)
		}
	}
}

func deployment(namespace, name string) appsv1.Deployment {
	return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

func TestNarrowAsksTheServerAndDropsWhatItSendsOfOtherShards(t *testing.T) {
	shard := Shard{Index: 1, Count: 3} // prod's
	var asked []string
	fake := watch.NewFakeWithChanSize(10, false)
	lw := shard.Narrow(&cache.ListWatch{
		ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			asked = append(asked, opts.ShardSelector)
			// A server that ignores the selector sends every namespace's.
			return &appsv1.DeploymentList{Items: []appsv1.Deployment{
				deployment("shop", "a"), deployment("prod", "b"), deployment("default", "c"), deployment("prod", "d"),
			}}, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			asked = append(asked, opts.ShardSelector)
			return fake, nil
		},
	})

	list, err := lw.ListWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, 2)
	for _, d := range list.(*appsv1.DeploymentList).Items {
		names = append(names, d.Namespace+"/"+d.Name)
	}
	if want := []string{"prod/b", "prod/d"}; !slices.Equal(names, want) {
		t.Errorf("listed %v, want %v", names, want)
	}

	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	shop, prod := deployment("shop", "e"), deployment("prod", "f")
	bookmark := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7"}}
	fake.Add(&shop)
	fake.Modify(&prod)
	fake.Action(watch.Bookmark, bookmark)
	fake.Delete(&shop)
	fake.Delete(&prod)
	events := make([]string, 0, 3)
	for range 3 {
		e := <-w.ResultChan()
		events = append(events, string(e.Type)+" "+e.Object.(*appsv1.Deployment).Namespace)
	}
	w.Stop()
	if want := []string{"MODIFIED prod", "BOOKMARK ", "DELETED prod"}; !slices.Equal(events, want) {
		t.Errorf("watched %q, want %q", events, want)
	}

	want := "shardRange(object.metadata.namespace, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')"
	if !slices.Equal(asked, []string{want, want}) {
		t.Errorf("the list and watch asked for shardSelector %q, want %q for both", asked, want)
	}
}

func TestTheModeIsWhoFilteredTheList(t *testing.T) {
	shard := Shard{Index: 1, Count: 3}
	for _, tc := range []struct {
		name string
		info *metav1.ShardInfo
		want Mode
	}{
		{"the selector echoed", &metav1.ShardInfo{Selector: shard.Selector().String()}, ModeServer},
		{"no shardInfo", nil, ModeClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked metav1.ListOptions
			mode, err := DetectMode(context.Background(), func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				asked = opts
				return &appsv1.DeploymentList{ListMeta: metav1.ListMeta{ShardInfo: tc.info}}, nil
			}, shard)
			if err != nil || mode != tc.want {
				t.Errorf("DetectMode = %q, %v; want %q", mode, err, tc.want)
			}
			want := "shardRange(object.metadata.namespace, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')"
			if asked.ShardSelector != want || asked.Limit != 1 {
				t.Errorf("asked %+v, want shardSelector %q and limit 1", asked, want)
			}
		})
	}
}
