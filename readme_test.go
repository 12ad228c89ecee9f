package analytics

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

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

// TestDocLinksResolve checks every relative link of README.md, the pages
// under docs/ and the modules' READMEs: the file it names exists and, for
// a link into a Markdown file, so does the heading its #anchor names (as
// GitHub spells a heading's anchor). Moving a section to another page
// cannot leave a link behind.
func TestDocLinksResolve(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	require.NoError(t, err)
	pages = append([]string{"README.md", filepath.Join("benchmarks", "README.md"), filepath.Join("otelmetrics", "README.md")}, pages...)
	fence := regexp.MustCompile("(?s)```.*?```")
	anchors := map[string]map[string]bool{}
	headings := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		text, err := os.ReadFile(file)
		require.NoError(t, err)
		a := map[string]bool{}
		for _, m := range regexp.MustCompile(`(?m)^#+ (.*)$`).FindAllStringSubmatch(fence.ReplaceAllString(string(text), ""), -1) {
			a[headingAnchor(m[1])] = true
		}
		anchors[file] = a
		return a
	}
	links := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, m := range regexp.MustCompile(`\]\(([^)\s]+)\)`).FindAllStringSubmatch(fence.ReplaceAllString(string(text), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			links++
			path, anchor, _ := strings.Cut(target, "#")
			file := page
			if path != "" {
				file = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
			}
			if _, err := os.Stat(file); !assert.NoError(t, err, "%s links to %s: no such file", page, target) {
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") {
				assert.True(t, headings(file)[anchor], "%s links to %s: %s has no heading with that anchor", page, target, file)
			}
		}
	}
	assert.NotZero(t, links, "relative links found")
}

// headingAnchor is the anchor GitHub gives a Markdown heading: lower case,
// punctuation but hyphens and underscores dropped, spaces made hyphens.
func headingAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
