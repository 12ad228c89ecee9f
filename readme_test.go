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
// and the pages under docs/ (a code block that starts with "package main")
// against this module, so the documentation's code cannot drift from the
// API. README.md holds the quickstart and docs/v3.md the v3compat program:
// each must have at least one.
func TestReadmeProgramsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	require.NoError(t, err)
	pages = append([]string{"README.md"}, pages...)
	root, err := os.Getwd()
	require.NoError(t, err)
	sum, err := os.ReadFile("go.sum")
	require.NoError(t, err)
	programs := map[string]int{}
	for _, page := range pages {
		text, err := os.ReadFile(page)
		require.NoError(t, err)
		blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(text), -1)
		for i, b := range blocks {
			if !strings.HasPrefix(b[1], "package main") {
				continue
			}
			programs[page]++
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
			assert.NoError(t, err, "%s code block %d compiles:\n%s\n%s", page, i+1, out, b[1])
		}
	}
	assert.NotZero(t, programs["README.md"], "complete programs found in README.md")
	assert.NotZero(t, programs[filepath.Join("docs", "v3.md")], "complete programs found in docs/v3.md")
}
