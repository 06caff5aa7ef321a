package azure

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
)

// Cloud names as CAPZ spells them in spec.azureEnvironment.
const (
	PublicCloud       = "AzurePublicCloud"
	ChinaCloud        = "AzureChinaCloud"
	USGovernmentCloud = "AzureUSGovernmentCloud"
)

// CustomCloud is a cloud the operator is configured with, for Azure Stack
// Hub, sovereign clouds CAPZ does not name, or an emulator. Clusters whose
// spec.azureEnvironment equals Name use it.
type CustomCloud struct {
	Name                    string `json:"name"`
	ResourceManagerEndpoint string `json:"resourceManagerEndpoint"`
	// ResourceManagerAudience defaults to ResourceManagerEndpoint.
	ResourceManagerAudience      string `json:"resourceManagerAudience,omitempty"`
	ActiveDirectoryAuthorityHost string `json:"activeDirectoryAuthorityHost"`
	// CAFile is a PEM bundle to trust for this cloud's endpoints, beside the
	// system roots.
	CAFile string `json:"caFile,omitempty"`
}

// Clouds resolves spec.azureEnvironment to endpoints.
type Clouds struct {
	// Default is used when spec.azureEnvironment is empty.
	Default string
	Custom  []CustomCloud
}

// LoadCustomCloud reads a CustomCloud from a JSON file and validates it.
func LoadCustomCloud(path string) (CustomCloud, error) {
	raw, err := ReadConfigFile(path)
	if err != nil {
		return CustomCloud{}, fmt.Errorf("reading custom cloud: %w", err)
	}
	var c CustomCloud
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return CustomCloud{}, fmt.Errorf("custom cloud %s: %w", path, err)
	}
	return c, c.Validate()
}

// Validate checks the custom cloud's fields.
func (c CustomCloud) Validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("name is required"))
	}
	for _, f := range []struct{ name, value string }{
		{"resourceManagerEndpoint", c.ResourceManagerEndpoint},
		{"activeDirectoryAuthorityHost", c.ActiveDirectoryAuthorityHost},
	} {
		u, err := url.Parse(f.value)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s %q must be an https URL", f.name, f.value))
		}
	}
	return errors.Join(errs...)
}

// Resolve returns the endpoints of a cloud by CAPZ's name, and the CA file
// of a custom cloud ("" for the public ones).
func (c Clouds) Resolve(name string) (cloud.Configuration, string, error) {
	if name == "" {
		name = c.Default
	}
	for _, cc := range c.Custom {
		if cc.Name == name {
			audience := cc.ResourceManagerAudience
			if audience == "" {
				audience = cc.ResourceManagerEndpoint
			}
			return cloud.Configuration{
				ActiveDirectoryAuthorityHost: strings.TrimSuffix(cc.ActiveDirectoryAuthorityHost, "/") + "/",
				Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
					cloud.ResourceManager: {Endpoint: cc.ResourceManagerEndpoint, Audience: audience},
				},
			}, cc.CAFile, nil
		}
	}
	switch name {
	case PublicCloud, "":
		return cloud.AzurePublic, "", nil
	case ChinaCloud:
		return cloud.AzureChina, "", nil
	case USGovernmentCloud:
		return cloud.AzureGovernment, "", nil
	}
	return cloud.Configuration{}, "", fmt.Errorf("spec.azureEnvironment %q is not a cloud the operator knows (%s, %s, %s or a configured custom cloud)",
		name, PublicCloud, ChinaCloud, USGovernmentCloud)
}
