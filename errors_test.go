package analytics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aliases are this package's names for types that package consumer
// defines, or package retry (SendRateStats, the Gate's state). go doc shows an alias's doc comment, not the struct behind it,
// so each alias's doc lists the type's fields.
var aliases = map[string]reflect.Type{
	// errors.go
	"HTTPError":      reflect.TypeFor[HTTPError](),
	"Phase":          reflect.TypeFor[Phase](),
	"TransportError": reflect.TypeFor[TransportError](),
	"BatchError":     reflect.TypeFor[BatchError](),
	"TokenError":     reflect.TypeFor[TokenError](),
	// stats.go
	"RetryStats":          reflect.TypeFor[RetryStats](),
	"TransportErrorStats": reflect.TypeFor[TransportErrorStats](),
	"SendRateStats":       reflect.TypeFor[SendRateStats](),
	"UploadStats":         reflect.TypeFor[UploadStats](),
}

// TestAliasDocsListTheFields holds the "Its fields:" list of each alias's
// doc comment to the exported fields of the type, in order, so that the
// two cannot drift; a type with JSON tags has the snake_case tags its doc
// says it has.
func TestAliasDocsListTheFields(t *testing.T) {
	docs := aliasDocs(t)
	require.ElementsMatch(t, slices.Collect(maps.Keys(aliases)), slices.Collect(maps.Keys(docs)), "the aliases of the package's files, every one held here")
	for name, typ := range aliases {
		doc := docs[name]
		home := "github.com/dualpath/analytics-go/consumer"
		if name == "SendRateStats" {
			home = "github.com/dualpath/analytics-go/retry"
		}
		assert.Equal(t, home, typ.PkgPath(), "%s: where its type is defined", name)
		var fields []string
		tagged := false
		if typ.Kind() == reflect.Struct {
			for _, f := range reflect.VisibleFields(typ) {
				if !f.IsExported() {
					continue
				}
				fields = append(fields, f.Name)
				if tag, ok := f.Tag.Lookup("json"); ok {
					tagged = true
					assert.Equal(t, snakeCase(f.Name), tag, "%s.%s: its JSON name", name, f.Name)
				}
			}
		}
		assert.Equal(t, fields, listedFields(doc), "%s: the fields its doc lists", name)
		assert.Equal(t, tagged, strings.Contains(doc, "snake_case"), "%s: whether its doc gives the JSON names", name)
	}
}

// aliasDocs returns the doc comment of each type alias declared in the
// package's non-test files.
func aliasDocs(t *testing.T) map[string]string {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	docs := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, spec := range gen.Specs {
				ts := spec.(*ast.TypeSpec)
				if !ts.Assign.IsValid() {
					continue
				}
				doc := ts.Doc
				if doc == nil {
					doc = gen.Doc
				}
				docs[ts.Name.Name] = doc.Text()
			}
		}
	}
	return docs
}

// listedFields returns the names of the list that follows "Its fields:"
// in doc: items that read "  - Name: what it is".
func listedFields(doc string) []string {
	_, list, ok := strings.Cut(doc, "Its fields:\n")
	if !ok {
		return nil
	}
	item := regexp.MustCompile(`^\s+- (\w+):`)
	var names []string
	for _, line := range strings.Split(list, "\n") {
		if line != "" && !unicode.IsSpace(rune(line[0])) {
			break // the paragraph after the list
		}
		if m := item.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

// snakeCase turns a field's name into its JSON name: NotWritten is
// not_written.
func snakeCase(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
