package analytics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// optionFuncs are the With* options by name, for the tests that call an
// option given its row of the options table.
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
	"WithHTTPClient":              WithHTTPClient,
	"WithLogger":                  WithLogger,
	"WithCallback":                WithCallback,
	"WithCloseRetries":            WithCloseRetries,
	"WithBlockingCallbacks":       WithBlockingCallbacks,
	"WithCloseTimeout":            WithCloseTimeout,
	"WithAdaptiveSendRate":        WithAdaptiveSendRate,
	"WithProbeInterval":           WithProbeInterval,
	"WithSpool":                   WithSpool,
	"WithSpoolMaxBytes":           WithSpoolMaxBytes,
	"WithSpoolSync":               WithSpoolSync,
	"WithOAuth":                   WithOAuth,
}

// optionRow returns the row of the options table named name ("FlushAt").
func optionRow(name string) (*optionSpec, bool) {
	i := slices.IndexFunc(optionTable, func(o optionSpec) bool { return o.name == name })
	if i < 0 {
		return nil, false
	}
	return &optionTable[i], true
}

// label is the option's name as the docs' tables write it: name, or
// name.part for a part of an option.
func (o *optionSpec) label() string {
	if o.part != "" {
		return o.name + "." + o.part
	}
	return o.name
}

// fieldType is the type of the config field the option sets.
func (o *optionSpec) fieldType() reflect.Type {
	return reflect.TypeOf(o.field(new(config))).Elem()
}

// defaultValue is the option's default as defaultConfig sets it.
func (o *optionSpec) defaultValue() any {
	c := defaultConfig()
	return reflect.ValueOf(o.field(&c)).Elem().Interface()
}

// hasValue says whether the option's default is a value the docs write
// (a number, a duration, on or off, a URL), not a function or a pointer.
func (o *optionSpec) hasValue() bool {
	switch o.fieldType().Kind() {
	case reflect.Int, reflect.Int64, reflect.Bool, reflect.String:
		return true
	}
	return false
}

// withDocs returns the doc comments of the With* functions of
// options.go by name, each on one line.
func withDocs(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "options.go", nil, parser.ParseComments)
	require.NoError(t, err)
	docs := map[string]string{}
	for _, decl := range f.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "With") {
			docs[fn.Name.Name] = strings.Join(strings.Fields(fn.Doc.Text()), " ")
		}
	}
	return docs
}

// Every With* function has a row in the options table and a doc comment,
// and sets the field of its row: the table's defaults, bounds and
// environment variables are those of the option the user calls. A row of
// a part of an option (OAuth.ClientID) is set by the option given a
// struct whose part is set.
func TestOptionTableIsTheWithFunctions(t *testing.T) {
	docs := withDocs(t)
	for name := range docs {
		_, ok := optionRow(strings.TrimPrefix(name, "With"))
		assert.True(t, ok, "%s has no row in the options table", name)
		assert.Contains(t, optionFuncs, name, "%s is not in optionFuncs", name)
	}
	for i := range optionTable {
		o := &optionTable[i]
		name := "With" + o.name
		fn, ok := optionFuncs[name]
		if !assert.True(t, ok, "the options table's %s has no With* function in optionFuncs", o.name) {
			continue
		}
		assert.NotEmpty(t, docs[name], "%s has a doc comment", name)
		fv := reflect.ValueOf(fn)
		typ := fv.Type().In(0)
		if o.part != "" {
			part, ok := typ.FieldByName(o.part)
			require.True(t, ok, "%s's parameter has the field %s", name, o.part)
			require.Equal(t, o.fieldType(), part.Type, "%s's parameter's %s is the type of its row's field", name, o.part)
			arg := reflect.New(typ).Elem()
			arg.FieldByName(o.part).SetString("x")
			got := defaultConfig()
			fv.Call([]reflect.Value{arg})[0].Interface().(Option)(&got)
			assert.Equal(t, "x", reflect.ValueOf(o.field(&got)).Elem().Interface(), "%s sets the field of its row %s", name, o.label())
			continue
		}
		require.Equal(t, o.fieldType(), typ, "%s's parameter is the type of its field", name)
		var arg reflect.Value
		switch typ.Kind() {
		case reflect.Int, reflect.Int64:
			arg = reflect.ValueOf(o.defaultValue()).Convert(typ)
			arg = reflect.ValueOf(arg.Int() + 1).Convert(typ)
		case reflect.Bool:
			arg = reflect.ValueOf(!o.defaultValue().(bool))
		case reflect.String:
			arg = reflect.ValueOf("http://127.0.0.1:9/x")
		case reflect.Func:
			arg = reflect.ValueOf(func(int) time.Duration { return time.Second })
		case reflect.Pointer:
			arg = reflect.New(typ.Elem())
		case reflect.Interface:
			arg = reflect.ValueOf(CallbackFunc(func(Message, error) {}))
		}
		got := defaultConfig()
		fv.Call([]reflect.Value{arg})[0].Interface().(Option)(&got)
		field := reflect.ValueOf(o.field(&got)).Elem()
		if typ.Comparable() && typ.Kind() != reflect.Interface {
			assert.Equal(t, arg.Interface(), field.Interface(), "%s sets the field of its row", name)
		} else {
			assert.False(t, field.IsZero(), "%s sets the field of its row", name)
		}
	}
}

// statedDefault is the "(default X)" of a doc comment; X may name a
// constant first, as in "(default DefaultSpoolSync, 1 s)", and may go on
// after a colon or a semicolon.
var statedDefault = regexp.MustCompile(`\(default (?:[A-Z]\w*, )?([^)]+?)(?:[:;] |\))`)

// Each With* option whose doc comment states a default ("(default 4 s)")
// states the real one: the option given that value leaves the default
// configuration as it was.
func TestOptionDocsStateTheDefaults(t *testing.T) {
	checked := 0
	for name, doc := range withDocs(t) {
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
	// WithHTTPClient, WithLogger and WithCallback say their default in words.
	assert.GreaterOrEqual(t, checked, len(optionFuncs)-3, "options whose stated default was checked")
}

// statedMost is an "at most X" of a doc comment.
var statedMost = regexp.MustCompile(`(?i)at most ([0-9][0-9,]*(?: days| [KMGT]iB)?)`)

// Each With* option with an upper bound states it in its doc comment, as
// "at most X".
func TestOptionDocsStateTheBounds(t *testing.T) {
	docs := withDocs(t)
	for i := range optionTable {
		o := &optionTable[i]
		if o.max == 0 {
			continue
		}
		doc := docs["With"+o.name]
		var stated []string
		found := false
		for _, m := range statedMost.FindAllStringSubmatch(doc, -1) {
			stated = append(stated, m[1])
			n, err := parseAmount(m[1], o.fieldType() == reflect.TypeFor[time.Duration]())
			found = found || err == nil && boundOnThisPlatform(o, n) == o.max
		}
		assert.True(t, found, "With%s's doc states no \"at most\" of its bound %d (it states %q)", o.name, o.max, stated)
	}
}

// boundOnThisPlatform is the upper bound n that the docs state for o, as
// it is on this platform: MaxQueueBytes is 64 GiB, or less on a 32-bit
// platform.
func boundOnThisPlatform(o *optionSpec, n int64) int64 {
	if o.name == "MaxQueueBytes" {
		return min(n, math.MaxInt-MaxMessageBytes)
	}
	return n
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
		n, err := parseAmount(s, false)
		v.SetInt(n)
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
	case typ.Kind() == reflect.Func && s == "nil", typ.Kind() == reflect.Struct && s == "off":
		return v, nil
	}
	return v, strconv.ErrSyntax
}

// parseAmount reads a count ("10,000"), a size ("64 MiB") or, if
// duration, a duration ("500 ms", "7 days") as the docs write them.
func parseAmount(s string, duration bool) (int64, error) {
	s = strings.TrimSpace(s)
	if duration {
		if days, ok := strings.CutSuffix(s, " days"); ok {
			n, err := strconv.ParseInt(days, 10, 64)
			return n * int64(24*time.Hour), err
		}
		d, err := time.ParseDuration(strings.NewReplacer(" ", "", "min", "m").Replace(s))
		return int64(d), err
	}
	num, unit, _ := strings.Cut(s, " ")
	n, err := strconv.ParseInt(strings.ReplaceAll(num, ",", ""), 10, 64)
	shift, ok := map[string]int{"": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}[unit]
	if !ok {
		return n, strconv.ErrSyntax
	}
	return n << shift, err
}

// envUnit is the unit of an option's variable as the docs write it.
func envUnit(o *optionSpec) string {
	switch o.fieldType() {
	case reflect.TypeFor[time.Duration]():
		return "seconds"
	case reflect.TypeFor[bool]():
		return "true"
	}
	return o.unit
}

// The list of variables in OptionsFromEnv's doc comment is the options
// table's, in its order, each with its unit.
func TestOptionsFromEnvDocListsTheTable(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "env.go", nil, parser.ParseComments)
	require.NoError(t, err)
	var doc string
	for _, decl := range f.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Name.Name == "OptionsFromEnv" {
			doc = fn.Doc.Text()
		}
	}
	var listed []string
	for line := range strings.Lines(doc) {
		fields := strings.Fields(line)
		if len(fields) < 2 || !strings.HasPrefix(fields[0], envPrefix) {
			continue
		}
		name, unit := fields[0], strings.Join(fields[1:], " ")
		listed = append(listed, name)
		if name == envWriteKey {
			continue
		}
		o, ok := envRow(name)
		if assert.True(t, ok, "OptionsFromEnv's doc lists %s, which is not in the options table", name) {
			assert.True(t, strings.HasPrefix(unit, envUnit(o)), "OptionsFromEnv's doc gives %s the unit %q, not %q", name, unit, envUnit(o))
		}
	}
	assert.Equal(t, envNames, listed, "the variables OptionsFromEnv's doc lists, in order")
}

// envRow returns the row of the options table whose variable is name.
func envRow(name string) (*optionSpec, bool) {
	i := slices.IndexFunc(optionTable, func(o optionSpec) bool { return o.env == name })
	if i < 0 {
		return nil, false
	}
	return &optionTable[i], true
}

// A docTable is a Markdown table of options or variables: its file, its
// header's cells (in lower case) and its rows' cells.
type docTable struct {
	file   string
	header []string
	rows   [][]string
}

// column is the index of the column headed name, or -1.
func (d docTable) column(name string) int { return slices.Index(d.header, name) }

// docTables returns the tables of README.md and docs/*.md whose first
// column is "option" or "variable", wherever they are in those files.
func docTables(t *testing.T) []docTable {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("docs", "*.md"))
	require.NoError(t, err)
	var tables []docTable
	for _, file := range append([]string{"README.md"}, files...) {
		text, err := os.ReadFile(file)
		require.NoError(t, err)
		var block []string
		flush := func() {
			if len(block) >= 2 && strings.HasPrefix(block[1], "|-") {
				d := docTable{file: file, header: cells(block[0])}
				for i := range d.header {
					d.header[i] = strings.ToLower(d.header[i])
				}
				for _, line := range block[2:] {
					d.rows = append(d.rows, cells(line))
				}
				if d.header[0] == "option" || d.header[0] == "variable" {
					tables = append(tables, d)
				}
			}
			block = nil
		}
		for line := range strings.Lines(string(text)) {
			if line = strings.TrimSpace(line); strings.HasPrefix(line, "|") {
				block = append(block, line)
			} else {
				flush()
			}
		}
		flush()
	}
	return tables
}

// cells splits a Markdown table row, without the backticks of code.
func cells(line string) []string {
	parts := strings.Split(strings.Trim(line, "|"), "|")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(strings.ReplaceAll(p, "`", ""))
	}
	return parts
}

// stated is the value a table's cell states, before any explanation
// (": ...", " (...)", ", ...").
func stated(cell string) string {
	for _, sep := range []string{": ", " (", ", "} {
		cell, _, _ = strings.Cut(cell, sep)
	}
	return cell
}

// The option and environment tables of README.md and docs/*.md, found by
// their header rows, agree with the options table: each row's default,
// range and unit, and each variable's option and unit. Together, the
// README and the docs pages list every option and variable, and so does
// docs/SPEC.md §7 on its own.
func TestDocTablesFollowTheOptionTable(t *testing.T) {
	// listed[file][kind] are the options or variables a file's tables of
	// a kind ("default", "range", "variable") list.
	listed := map[string]map[string]map[string]bool{}
	note := func(file, kind, name string) {
		if listed[file] == nil {
			listed[file] = map[string]map[string]bool{}
		}
		if listed[file][kind] == nil {
			listed[file][kind] = map[string]bool{}
		}
		listed[file][kind][name] = true
	}
	for _, d := range docTables(t) {
		for _, row := range d.rows {
			if len(row) != len(d.header) {
				t.Errorf("%s: a row of the table headed %q has %d cells: %q", d.file, d.header, len(row), row)
				continue
			}
			if d.header[0] == "variable" {
				checkVariableRow(t, d, row, note)
			} else {
				checkOptionRow(t, d, row, note)
			}
		}
	}
	wantAll := map[string][]string{}
	for i := range optionTable {
		o := &optionTable[i]
		wantAll["default"] = append(wantAll["default"], o.name)
		if o.max != 0 {
			wantAll["range"] = append(wantAll["range"], o.name)
		}
		if o.env != "" {
			wantAll["variable"] = append(wantAll["variable"], o.env)
		}
	}
	wantAll["variable"] = append(wantAll["variable"], envWriteKey)
	specFile := filepath.Join("docs", "SPEC.md")
	for kind, names := range wantAll {
		for _, name := range names {
			inDocs := false
			for file, kinds := range listed {
				inDocs = inDocs || file != specFile && kinds[kind][name]
			}
			assert.True(t, inDocs, "no table of README.md or docs/*.md but SPEC lists %s (a table with a %q column)", name, kind)
			assert.True(t, listed[specFile][kind][name], "no table of docs/SPEC.md lists %s (a table with a %q column)", name, kind)
		}
	}
}

// checkOptionRow checks a row of a table of options: the first cell names
// one option or several ("FlushAt / FlushInterval", "BackoffCap,
// RequestTimeout"), a "default" cell states the default of each (split
// as the names are), a "range" cell the bounds of all, a "unit" cell
// names the unit.
func checkOptionRow(t *testing.T, d docTable, row []string, note func(file, kind, name string)) {
	t.Helper()
	sep := ", "
	if strings.Contains(row[0], " / ") {
		sep = " / "
	}
	names := strings.Split(row[0], sep)
	defaults := []string(nil)
	if c := d.column("default"); c >= 0 {
		defaults = strings.Split(row[c], " / ")
		if len(names) > 1 && !assert.Len(t, defaults, len(names), "%s: the defaults of %s", d.file, row[0]) {
			return
		}
	}
	for i, name := range names {
		o, ok := optionRow(strings.TrimPrefix(name, "With"))
		if !assert.True(t, ok, "%s lists an option %q, which is not in the options table", d.file, name) {
			continue
		}
		where := d.file + "'s row of " + o.name
		if defaults != nil {
			note(d.file, "default", o.name)
			if o.hasValue() {
				value := strings.TrimSpace(strings.TrimSuffix(stated(defaults[i]), o.unit))
				got, err := parseStated(value, o.fieldType())
				if assert.NoError(t, err, "%s: the default %q", where, defaults[i]) {
					assert.Equal(t, o.defaultValue(), got.Interface(), "%s: the default %q", where, defaults[i])
				}
			}
		}
		if c := d.column("range"); c >= 0 {
			checkRange(t, where, o, row[c])
			if o.max != 0 {
				note(d.file, "range", o.name)
			}
		}
		if c := d.column("unit"); c >= 0 {
			unit := o.unit
			if o.part != "" {
				unit = o.name // an option of parts takes the struct of its name
			}
			assert.Contains(t, row[c], unit, "%s: the unit", where)
		}
	}
}

// checkRange checks a range cell ("1 – 10,000", "> 0 – 7 days", "" for
// an option without bounds) against the option's bounds.
func checkRange(t *testing.T, where string, o *optionSpec, cell string) {
	t.Helper()
	if o.max == 0 {
		assert.Empty(t, cell, "%s: a range for an option without bounds", where)
		return
	}
	lo, hi, ok := strings.Cut(stated(cell), " – ")
	if !assert.True(t, ok, "%s: the range %q is not \"min – max\"", where, cell) {
		return
	}
	duration := o.fieldType() == reflect.TypeFor[time.Duration]()
	var low int64
	var err error
	if lo == "> 0" {
		low = 1
	} else {
		low, err = parseAmount(lo, duration)
	}
	if assert.NoError(t, err, "%s: the range %q", where, cell) {
		assert.Equal(t, o.min, low, "%s: the least value of the range %q", where, cell)
	}
	high, err := parseAmount(hi, duration)
	if assert.NoError(t, err, "%s: the range %q", where, cell) {
		assert.Equal(t, o.max, boundOnThisPlatform(o, high), "%s: the largest value of the range %q", where, cell)
	}
}

// checkVariableRow checks a row of a table of variables: the variable is
// in the options table (or is the write key), an "option" cell names its
// option, a "unit" cell starts with its unit.
func checkVariableRow(t *testing.T, d docTable, row []string, note func(file, kind, name string)) {
	t.Helper()
	name := row[0]
	note(d.file, "variable", name)
	if name == envWriteKey {
		return
	}
	o, ok := envRow(name)
	if !assert.True(t, ok, "%s lists a variable %s, which is not in the options table", d.file, name) {
		return
	}
	if c := d.column("option"); c >= 0 {
		assert.Equal(t, o.label(), row[c], "%s: the option of %s", d.file, name)
	}
	if c := d.column("unit"); c >= 0 {
		assert.True(t, strings.HasPrefix(row[c], envUnit(o)), "%s: the unit of %s is %q, not %q", d.file, name, row[c], envUnit(o))
	}
}

// The With* parameter types and the unit the table gives them agree, so
// that the docs' unit column names the type a caller passes.
func TestOptionTableUnits(t *testing.T) {
	for i := range optionTable {
		o := &optionTable[i]
		switch o.fieldType() {
		case reflect.TypeFor[time.Duration]():
			assert.Equal(t, "time.Duration", o.unit, "%s", o.name)
		case reflect.TypeFor[bool]():
			assert.Equal(t, "bool", o.unit, "%s", o.name)
		case reflect.TypeFor[*http.Client](), reflect.TypeFor[*slog.Logger]():
			assert.Equal(t, o.fieldType().String(), o.unit, "%s", o.name)
		}
		assert.Equal(t, o.max != 0, o.fieldType().Kind() == reflect.Int || o.fieldType().Kind() == reflect.Int64,
			"%s: bounded if and only if a count or a duration", o.name)
	}
}
