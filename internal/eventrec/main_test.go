package eventrec_test

import (
	"testing"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// TestMain starts each test's API server in the background while the test
// before it runs (testenv.Main).
func TestMain(m *testing.M) { testenv.Main(m) }
