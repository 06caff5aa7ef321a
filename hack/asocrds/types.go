//go:build asotypes

// Package asocrds only pins the ASO API package whose CRDs generate.sh
// generates; it is never built (the build tag keeps it out).
package asocrds

import (
	// The API version CAPZ v1.23 and v1.27 write.
	_ "github.com/Azure/azure-service-operator/v2/api/network/v1api20220701"
)
