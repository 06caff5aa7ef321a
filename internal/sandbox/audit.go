package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// auditPolicy records, at Metadata level, every write to AzureClusters,
// AzurePrivateEndpoints and AzurePrivateLinkServices: the benchmark counts
// writes per object and per writer with it.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    verbs: ["create", "update", "patch", "delete"]
    resources:
      - group: infrastructure.cluster.x-k8s.io
        resources: ["azureclusters", "azureclusters/status"]
      - group: privatelink.giantswarm.io
        resources: ["azureprivateendpoints", "azureprivateendpoints/status", "azureprivatelinkservices", "azureprivatelinkservices/status"]
  - level: None
`

// auditFlags writes the audit policy into dir and returns the kube-apiserver
// flags that log to dir/audit.log.
func auditFlags(dir string) (map[string]string, string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, "", err
	}
	log := filepath.Join(dir, "audit.log")
	return map[string]string{
		"audit-policy-file":   policy,
		"audit-log-path":      log,
		"audit-log-format":    "json",
		"audit-log-mode":      "blocking",
		"audit-log-maxbackup": "0",
	}, log, nil
}

// AuditEvent is the part of a Kubernetes audit event the sandbox reads.
type AuditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	// StageTimestamp is when the API server answered.
	StageTimestamp time.Time `json:"stageTimestamp"`
}

// AuditEvents reads the audit log (Options.Audit): every write to an
// AzureCluster since the sandbox started, oldest first.
func (sb *Sandbox) AuditEvents() ([]AuditEvent, error) {
	if sb.AuditLog == "" {
		return nil, fmt.Errorf("the sandbox was started without Options.Audit")
	}
	f, err := os.Open(sb.AuditLog)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s: %w", sb.AuditLog, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
