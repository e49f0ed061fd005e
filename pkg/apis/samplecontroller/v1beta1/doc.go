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

// Package v1beta1 is version v1beta1 of the samplecontroller.k8s.io API.
// The types are written by hand; deep-copy functions, clientsets, listers,
// informers and apply configurations are generated from the tags below by
// hack/update-codegen.sh.
//
// +k8s:deepcopy-gen=package
// +groupName=samplecontroller.k8s.io
package v1beta1
