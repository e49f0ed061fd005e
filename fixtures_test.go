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

package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
)

var updateFixtures = flag.Bool("update", false, "rewrite "+deploymentFixturesFile+" from the seed corpus of FuzzNewDeployment")

const (
	// newDeploymentCorpus is the seed corpus of FuzzNewDeployment. Entries
	// named "skipped-*" are Foos the controller never maps; the others are
	// valid and become fixtures.
	newDeploymentCorpus = "testdata/fuzz/FuzzNewDeployment"
	// deploymentFixturesFile holds, for each valid seed, the Deployment
	// newDeployment asks for, serialized as the controller sends it. The
	// e2e suite (which cannot import this package) submits each one to a
	// real API server.
	deploymentFixturesFile = "testdata/deployment-fixtures.json"
)

// deploymentFixture is one entry of deploymentFixturesFile.
type deploymentFixture struct {
	// Seed names the corpus entry.
	Seed string `json:"seed"`
	// Foo is the Foo of the entry.
	Foo *samplev1alpha1.Foo `json:"foo"`
	// Deployment is the apply configuration newDeployment returns, as JSON:
	// the body of the controller's apply request, and the object of its
	// create request.
	Deployment json.RawMessage `json:"deployment"`
}

// The e2e suite's fixtures are the current mapping of the current corpus:
// regenerate them with "go test -run TestDeploymentFixturesAreCurrent -update ."
func TestDeploymentFixturesAreCurrent(t *testing.T) {
	want := deploymentFixtures(t)
	if *updateFixtures {
		if err := os.WriteFile(deploymentFixturesFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(deploymentFixturesFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: regenerate it with go test -run %s -update .", deploymentFixturesFile, t.Name())
	}
}

// deploymentFixtures maps every valid seed of the corpus, and checks on the
// way that the seeds' names say truly whether the controller maps them.
func deploymentFixtures(t *testing.T) []byte {
	t.Helper()
	entries, err := os.ReadDir(newDeploymentCorpus)
	if err != nil {
		t.Fatal(err)
	}
	fixtures := []deploymentFixture{}
	for _, entry := range entries { // ReadDir sorts by name
		foo, valid, err := fooFromCorpusEntry(filepath.Join(newDeploymentCorpus, entry.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if skipped := strings.HasPrefix(entry.Name(), "skipped-"); skipped == valid {
			t.Errorf("seed %s is misnamed: valid Foo and spec = %v; only invalid seeds are named skipped-*", entry.Name(), valid)
			continue
		}
		if !valid {
			continue
		}
		deployment, err := json.Marshal(newDeployment(foo))
		if err != nil {
			t.Fatal(err)
		}
		fixtures = append(fixtures, deploymentFixture{Seed: entry.Name(), Foo: foo, Deployment: deployment})
	}
	data, err := json.MarshalIndent(fixtures, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(data, '\n')
}

// fooFromCorpusEntry builds the Foo of a FuzzNewDeployment corpus entry
// exactly as the fuzz target does, and reports whether it is valid.
func fooFromCorpusEntry(path string) (*samplev1alpha1.Foo, bool, error) {
	e, err := readCorpusEntry(path)
	if err != nil {
		return nil, false, err
	}
	// Arguments are evaluated left to right: in the fuzz function's order.
	foo, valid := fuzzedFoo(e.string(), e.string(), e.uint64(), e.uint64(), e.string(), e.int32(), e.bool())
	if err := e.end(); err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return foo, valid, nil
}

// corpusEntry reads the values of a corpus file ("go test fuzz v1", then one
// Go literal per line such as string("a") or int32(-1)) one by one, in the
// order of the fuzz function's arguments. The first problem is kept for end.
type corpusEntry struct {
	lines []string
	err   error
}

func readCorpusEntry(path string) (*corpusEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if lines[0] != "go test fuzz v1" {
		return nil, fmt.Errorf("%s: not a fuzz corpus file", path)
	}
	return &corpusEntry{lines: lines[1:]}, nil
}

// next returns the type and the literal of the next value, whose type must be
// one of types.
func (e *corpusEntry) next(types ...string) (string, string) {
	if e.err != nil {
		return "", ""
	}
	if len(e.lines) == 0 {
		e.err = fmt.Errorf("too few values: no %s", types[0])
		return "", ""
	}
	line := strings.TrimSpace(e.lines[0])
	e.lines = e.lines[1:]
	for _, typ := range types {
		if literal, ok := strings.CutPrefix(line, typ+"("); ok {
			if literal, ok = strings.CutSuffix(literal, ")"); ok {
				return typ, literal
			}
		}
	}
	e.err = fmt.Errorf("%s is not a %s", line, strings.Join(types, " or "))
	return "", ""
}

func (e *corpusEntry) string() string {
	_, literal := e.next("string")
	s, err := strconv.Unquote(literal)
	e.keep(err)
	return s
}

func (e *corpusEntry) uint64() uint64 {
	_, literal := e.next("uint64")
	u, err := strconv.ParseUint(literal, 10, 64)
	e.keep(err)
	return u
}

// int32 reads an int32, which Go writes as a rune literal when it is a valid
// rune: int32(-1), but rune('\x01') for 1.
func (e *corpusEntry) int32() int32 {
	typ, literal := e.next("int32", "rune")
	if typ == "rune" {
		s, err := strconv.Unquote(literal)
		if runes := []rune(s); err == nil && len(runes) == 1 {
			return runes[0]
		}
		e.keep(fmt.Errorf("rune(%s) is not one character: %v", literal, err))
		return 0
	}
	i, err := strconv.ParseInt(literal, 10, 32)
	e.keep(err)
	return int32(i)
}

func (e *corpusEntry) bool() bool {
	_, literal := e.next("bool")
	b, err := strconv.ParseBool(literal)
	e.keep(err)
	return b
}

// keep records the first error of parsing a value.
func (e *corpusEntry) keep(err error) {
	if e.err == nil {
		e.err = err
	}
}

// end reports the first problem, or values left over.
func (e *corpusEntry) end() error {
	if e.err == nil && len(e.lines) > 0 {
		return fmt.Errorf("%d values too many", len(e.lines))
	}
	return e.err
}

// The corpus reader reads the files Go writes: this is the input with which
// FuzzNewDeployment found that a Foo name longer than 63 characters is not a
// valid label value (replicas 1 written as a rune).
func TestReadCorpusEntryReadsGoEncoding(t *testing.T) {
	path := filepath.Join(t.TempDir(), "687954bd5123e803")
	entry := `go test fuzz v1
string("0000000000000000000000000000000000000000000000000000000000000000")
string("0")
uint64(7757371264673321425)
uint64(9274038358635720904)
string("0")
rune('\x01')
bool(true)
`
	if err := os.WriteFile(path, []byte(entry), 0o644); err != nil {
		t.Fatal(err)
	}
	foo, valid, err := fooFromCorpusEntry(path)
	if err != nil {
		t.Fatal(err)
	}
	if !valid || foo.Name != strings.Repeat("0", 64) || foo.Namespace != "0" || foo.UID != "6ba7b810-9dad-11d1-80b4-00c04fd430c8" ||
		foo.Spec.DeploymentName != "0" || foo.Spec.Replicas == nil || *foo.Spec.Replicas != 1 {
		t.Errorf("read valid=%v %+v", valid, foo)
	}
}
