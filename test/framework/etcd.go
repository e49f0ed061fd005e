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

package framework

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// EtcdValue returns what etcd holds under key (nil if nothing), read through
// etcd's JSON gateway (/v3/kv/range): what the API server stored, in the
// version it stored it, which no API request shows. Only for a cluster this
// process started, whose etcd listens on 127.0.0.1 over plain HTTP.
func (c *Cluster) EtcdValue(ctx context.Context, key string) ([]byte, error) {
	if c.kwok == nil {
		return nil, errors.New("etcd is reachable only in a control plane the suite started (not with E2E_KUBECONFIG)")
	}
	ports, err := c.kwok.ports()
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))})
	if err != nil {
		return nil, err
	}
	url := "http://127.0.0.1:" + strconv.Itoa(ports.EtcdPort) + "/v3/kv/range"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s", url, resp.Status, data)
	}
	var out struct {
		KVs []struct {
			Value []byte `json:"value"` // base64 in JSON, decoded by encoding/json
		} `json:"kvs"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if len(out.KVs) == 0 {
		return nil, nil
	}
	return out.KVs[0].Value, nil
}
