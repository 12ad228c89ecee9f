package analytics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// optionFuncs are the With* options by name, for TestOptionDocsStateTheDefaults.
var optionFuncs = map[string]any{
	"WithEndpoint":                WithEndpoint,
	"WithFlushAt":                 WithFlushAt,
	"WithFlushInterval":           WithFlushInterval,
	"WithMaxQueueSize":            WithMaxQueueSize,
	"WithMaxQueueBytes":           WithMaxQueueBytes,
	"WithMaxConcurrentRequests":   WithMaxConcurrentRequests,
	"WithRetryCount":              WithRetryCount,
	"WithBackoffBase":             WithBackoffBase,
	"WithBackoffCap":              WithBackoffCap,
	"WithMaxTotalBackoffDuration": WithMaxTotalBackoffDuration,
	"WithMaxRateLimitDuration":    WithMaxRateLimitDuration,
	"WithRateLimitRetryAfterCap":  WithRateLimitRetryAfterCap,
	"WithRequestTimeout":          WithRequestTimeout,
	"WithGzip":                    WithGzip,
	"WithV3Wire":                  WithV3Wire,
	"WithBackoffFunc":             WithBackoffFunc,
	"WithCloseRetries":            WithCloseRetries,
	"WithBlockingCallbacks":       WithBlockingCallbacks,
	"WithCloseTimeout":            WithCloseTimeout,
	"WithAdaptiveSendRate":        WithAdaptiveSendRate,
	"WithProbeInterval":           WithProbeInterval,
	"WithSpool":                   WithSpool,
	"WithSpoolMaxBytes":           WithSpoolMaxBytes,
	"WithSpoolSync":               WithSpoolSync,
}

// statedDefault is the "(default X)" of a doc comment; X may name a
// constant first, as in "(default DefaultSpoolSync, 1 s)", and may go on
// after a colon or a semicolon.
var statedDefault = regexp.MustCompile(`\(default (?:[A-Z]\w*, )?([^)]+?)(?:[:;] |\))`)

// Each With* option whose doc comment states a default ("(default 4 s)")
// states the real one: the option given that value leaves the default
// configuration as it was.
func TestOptionDocsStateTheDefaults(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "options.go", nil, parser.ParseComments)
	require.NoError(t, err)
	checked := 0
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "With") {
			continue
		}
		name := fn.Name.Name
		doc := strings.Join(strings.Fields(fn.Doc.Text()), " ")
		m := statedDefault.FindStringSubmatch(doc)
		if m == nil {
			continue
		}
		opt, ok := optionFuncs[name]
		if !assert.True(t, ok, "%s states a default: add it to optionFuncs", name) {
			continue
		}
		fv := reflect.ValueOf(opt)
		arg, err := parseStated(m[1], fv.Type().In(0))
		if !assert.NoError(t, err, "%s: the default its doc states, %q", name, m[1]) {
			continue
		}
		c := defaultConfig()
		fv.Call([]reflect.Value{arg})[0].Interface().(Option)(&c)
		assert.Equal(t, defaultConfig(), c, "%s's doc says (default %s), which is not the default", name, m[1])
		checked++
	}
	assert.GreaterOrEqual(t, checked, len(optionFuncs), "options whose stated default was checked")
}

// parseStated reads a stated default as a value of the option's parameter
// type: a duration ("500 ms", "12 h"), a count ("10,000"), a size
// ("32 MiB"), on or off, a string (off: ""), or nil for a function.
func parseStated(s string, typ reflect.Type) (reflect.Value, error) {
	s = strings.TrimSpace(s)
	v := reflect.New(typ).Elem()
	switch {
	case typ == reflect.TypeFor[time.Duration]():
		d, err := time.ParseDuration(strings.NewReplacer(" ", "", "min", "m").Replace(s))
		v.SetInt(int64(d))
		return v, err
	case typ.Kind() == reflect.Int || typ.Kind() == reflect.Int64:
		num, unit, _ := strings.Cut(s, " ")
		n, err := strconv.ParseInt(strings.ReplaceAll(num, ",", ""), 10, 64)
		shift, ok := map[string]int{"": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}[unit]
		if !ok {
			return v, strconv.ErrSyntax
		}
		v.SetInt(n << shift)
		return v, err
	case typ.Kind() == reflect.Bool:
		v.SetBool(s == "on")
		if s != "on" && s != "off" {
			return v, strconv.ErrSyntax
		}
		return v, nil
	case typ.Kind() == reflect.String:
		if s != "off" {
			v.SetString(s)
		}
		return v, nil
	case typ.Kind() == reflect.Func && s == "nil":
		return v, nil
	}
	return v, strconv.ErrSyntax
}
