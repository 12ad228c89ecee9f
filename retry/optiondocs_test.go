package retry

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The root package's WithAdaptiveSendRate describes the rules of this
// package's send rate; each multiple of the healthy rate it states ("up to
// 2.5 times it") is the ceiling the send rate really rises to. The test
// reads numbers, not sentences, so the doc may be reworded freely.
func TestAdaptiveSendRateDocStatesTheCeiling(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../options.go", nil, parser.ParseComments)
	require.NoError(t, err)
	var doc string
	for _, decl := range f.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Name.Name == "WithAdaptiveSendRate" {
			doc = strings.Join(strings.Fields(fn.Doc.Text()), " ")
		}
	}
	require.NotEmpty(t, doc, "WithAdaptiveSendRate's doc comment in options.go")
	times := regexp.MustCompile(`(\d+(?:\.\d+)?) times`).FindAllStringSubmatch(doc, -1)
	require.NotEmpty(t, times, "WithAdaptiveSendRate's doc states the ceiling as a multiple (N times): %s", doc)
	for _, m := range times {
		n, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		assert.Equal(t, ceilingFactor, n, "WithAdaptiveSendRate's doc says %q; the ceiling is %v times the healthy rate", m[0], ceilingFactor)
	}
}
