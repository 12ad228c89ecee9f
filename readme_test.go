package analytics

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeProgramsCompile builds every complete Go program in README.md
// (a code block that starts with "package main") against this module, so
// the README's code cannot drift from the API.
func TestReadmeProgramsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	root, err := os.Getwd()
	require.NoError(t, err)
	sum, err := os.ReadFile("go.sum")
	require.NoError(t, err)
	programs := 0
	for i, b := range blocks {
		if !strings.HasPrefix(b[1], "package main") {
			continue
		}
		programs++
		dir := t.TempDir()
		files := map[string]string{
			"main.go": b[1],
			"go.mod": "module readme\n\ngo 1.25\n\nrequire github.com/dualpath/analytics-go v0.0.0\n\n" +
				"replace github.com/dualpath/analytics-go => " + root + "\n",
			"go.sum": string(sum),
		}
		for name, content := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
		}
		cmd := exec.Command("go", "vet", ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "README code block %d compiles:\n%s\n%s", i+1, out, b[1])
	}
	assert.NotZero(t, programs, "complete programs found in README.md")
}
