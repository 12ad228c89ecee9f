package analyticstest

import (
	"go/build"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// As the package doc says: of the SDK, the mock imports only the package
// that holds the two limits it shares with it; it checks what it receives
// with code of its own.
func TestImportsOfTheSDK(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	require.NoError(t, err)
	const module = "github.com/dualpath/analytics-go"
	var sdk []string
	for _, path := range pkg.Imports { // the package's own files, not its tests
		if path == module || strings.HasPrefix(path, module+"/") {
			sdk = append(sdk, path)
		}
	}
	assert.Equal(t, []string{module + "/internal/defaults"}, sdk, "packages of the SDK the mock imports")
}
