package main

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This file reads PromQL well enough to say what an expression refers to:
// the metric names of its selectors, the label names of their matchers
// and of its grouping clauses, and the functions around them. It is not a
// parser of all PromQL (client_golang's is not a dependency of this
// module): what it does not understand (vector matching with on() or
// ignoring(), @, label names in string arguments, a selector without a
// metric name) is an error, so that the dashboard's test cannot pass by
// missing a reference.

// promQuery is what one expression refers to. Positions are indexes of
// its tokens: a grouping or a call covers the selectors between from and
// to.
type promQuery struct {
	selectors []promSelector
	groupings []promGrouping
	calls     []promCall
	variables []string // Grafana's: job for $job and ${job}, __rate_interval, ...
}

type promSelector struct {
	metric   string
	matchers []promMatcher
	pos      int
}

type promMatcher struct {
	label, op, value string
}

// promGrouping is a by or without clause and the span of the expression
// it groups.
type promGrouping struct {
	keyword  string
	labels   []string
	from, to int
}

// promCall is a function or an aggregation, with the span of its
// arguments and, for an aggregation, the index of its grouping (or -1).
type promCall struct {
	fn       string
	from, to int
	grouping int
}

// metricsIn is the metric names of the selectors between from and to.
func (q *promQuery) metricsIn(from, to int) []string {
	var names []string
	for _, s := range q.selectors {
		if s.pos > from && s.pos < to {
			names = append(names, s.metric)
		}
	}
	return names
}

// metrics is every metric name the expression refers to, sorted, once each.
func (q *promQuery) metrics() []string {
	var names []string
	for _, s := range q.selectors {
		names = append(names, s.metric)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

var (
	// promAggregations take a grouping clause: sum by (x) (...).
	promAggregations = set("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
		"count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio")
	// promKeywords are neither metrics nor functions.
	promKeywords = set("and", "or", "unless", "bool", "atan2", "offset")
	// promUnsupported are constructs this reader does not follow.
	promUnsupported = set("on", "ignoring", "group_left", "group_right",
		"label_replace", "label_join", "sort_by_label", "sort_by_label_desc", "count_values")
	promMatchOps = set("=", "!=", "=~", "!~")
)

func set(words ...string) map[string]bool {
	m := map[string]bool{}
	for _, w := range words {
		m[w] = true
	}
	return m
}

type tokenKind int

const (
	tokIdent  tokenKind = iota
	tokNumber           // 0.99, 1e-3, 5m, Inf, NaN
	tokString           // the value, unquoted
	tokRange            // [5m], [$__rate_interval], [1h:1m]: the text inside
	tokVar              // $job, ${job}, ${job:regex}: the name
	tokPunct            // ( ) { } ,
	tokOp               // + - * / % ^ == != < > <= >= = =~ !~
)

type token struct {
	kind tokenKind
	text string
}

var (
	// grafanaVar is a Grafana variable where a token starts: $name,
	// ${name}, ${name:format}.
	grafanaVar = regexp.MustCompile(`^\$(?:\{([A-Za-z0-9_]+)(?::[A-Za-z0-9_]+)?\}|([A-Za-z0-9_]+))`)
	// grafanaVarIn is one inside a string or a range.
	grafanaVarIn = regexp.MustCompile(`\$(?:\{([A-Za-z0-9_]+)(?::[A-Za-z0-9_]+)?\}|([A-Za-z0-9_]+))`)
)

// lexPromQL cuts expr into tokens.
func lexPromQL(expr string) ([]token, error) {
	var toks []token
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
	isDigit := func(c byte) bool { return '0' <= c && c <= '9' }
	isIdent := func(c byte) bool { return isIdentStart(c) || isDigit(c) }
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#': // a comment, to the end of the line
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("a string not closed at %d", i)
			}
			value := expr[i+1 : j]
			if c == '"' {
				v, err := strconv.Unquote(expr[i : j+1])
				if err != nil {
					return nil, fmt.Errorf("the string at %d: %w", i, err)
				}
				value = v
			} else if c == '\'' {
				value = strings.ReplaceAll(strings.ReplaceAll(value, `\'`, `'`), `\\`, `\`)
			}
			toks = append(toks, token{tokString, value})
			i = j + 1
		case c == '[':
			if strings.HasPrefix(expr[i:], "[[") {
				return nil, fmt.Errorf("the variable syntax [[name]] at %d: use $name", i)
			}
			j := strings.IndexByte(expr[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("a range not closed at %d", i)
			}
			toks = append(toks, token{tokRange, expr[i+1 : i+j]})
			i += j + 1
		case c == '$':
			m := grafanaVar.FindStringSubmatch(expr[i:])
			if m == nil {
				return nil, fmt.Errorf("a $ that is no variable at %d", i)
			}
			toks = append(toks, token{tokVar, m[1] + m[2]})
			i += len(m[0])
		case isDigit(c) || c == '.' && i+1 < len(expr) && isDigit(expr[i+1]):
			j := i
			for j < len(expr) && (isIdent(expr[j]) || expr[j] == '.' ||
				(expr[j] == '+' || expr[j] == '-') && (expr[j-1] == 'e' || expr[j-1] == 'E') && !strings.HasPrefix(strings.ToLower(expr[i:j]), "0x")) {
				j++
			}
			toks = append(toks, token{tokNumber, expr[i:j]})
			i = j
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			word := expr[i:j]
			kind := tokIdent
			if w := strings.ToLower(word); w == "inf" || w == "nan" {
				kind = tokNumber
			}
			toks = append(toks, token{kind, word})
			i = j
		case strings.ContainsRune("(){},", rune(c)):
			toks = append(toks, token{tokPunct, string(c)})
			i++
		case c == '@':
			return nil, fmt.Errorf("the @ modifier at %d is not followed by this reader", i)
		default:
			op := string(c)
			if i+1 < len(expr) && slices.Contains([]string{"==", "!=", "<=", ">=", "=~", "!~"}, expr[i:i+2]) {
				op = expr[i : i+2]
			}
			if !strings.Contains("+-*/%^=<>!~", op[:1]) || op == "!" || op == "~" {
				return nil, fmt.Errorf("an unexpected %q at %d", c, i)
			}
			toks = append(toks, token{tokOp, op})
			i += len(op)
		}
	}
	return toks, nil
}

// parsePromQL says what expr refers to, or why it cannot.
func parsePromQL(expr string) (*promQuery, error) {
	toks, err := lexPromQL(expr)
	if err != nil {
		return nil, err
	}
	// The matching parenthesis of each.
	match := make([]int, len(toks))
	var open []int
	for i, t := range toks {
		switch {
		case t.kind == tokPunct && t.text == "(":
			open = append(open, i)
		case t.kind == tokPunct && t.text == ")":
			if len(open) == 0 {
				return nil, fmt.Errorf("a ) without its (")
			}
			o := open[len(open)-1]
			open = open[:len(open)-1]
			match[o], match[i] = i, o
		}
	}
	if len(open) > 0 {
		return nil, fmt.Errorf("a ( not closed")
	}
	is := func(i int, kind tokenKind, text string) bool {
		return i >= 0 && i < len(toks) && toks[i].kind == kind && toks[i].text == text
	}
	// isWord is is for a keyword, in any case, as PromQL reads them.
	isWord := func(i int, word string) bool {
		return i >= 0 && i < len(toks) && toks[i].kind == tokIdent && strings.EqualFold(toks[i].text, word)
	}

	q := &promQuery{}
	for _, t := range toks {
		if t.kind == tokVar {
			q.variables = append(q.variables, t.text)
		}
		if t.kind == tokString || t.kind == tokRange {
			if strings.Contains(t.text, "[[") {
				return nil, fmt.Errorf("the variable syntax [[name]] in %q: use $name", t.text)
			}
			for _, m := range grafanaVarIn.FindAllStringSubmatch(t.text, -1) {
				q.variables = append(q.variables, m[1]+m[2])
			}
		}
	}

	// labelList reads ( name, ... ) at i; it returns the names and the
	// index after the list.
	labelList := func(i int, keyword string) ([]string, int, error) {
		if !is(i, tokPunct, "(") {
			return nil, 0, fmt.Errorf("%s without its ( label, ... )", keyword)
		}
		var labels []string
		for j := i + 1; j < match[i]; j++ {
			if toks[j].kind != tokIdent {
				return nil, 0, fmt.Errorf("%s (...) holds %q, not a label name", keyword, toks[j].text)
			}
			labels = append(labels, toks[j].text)
			if j+1 < match[i] && !is(j+1, tokPunct, ",") {
				return nil, 0, fmt.Errorf("%s (...): a , missing after %s", keyword, toks[j].text)
			}
			j++
		}
		return labels, match[i] + 1, nil
	}
	// matchers reads { label op "value", ... } at i; it returns them and
	// the index after the }.
	matchers := func(i int) ([]promMatcher, int, error) {
		var ms []promMatcher
		j := i + 1
		for !is(j, tokPunct, "}") {
			if j+2 >= len(toks) || toks[j].kind != tokIdent || toks[j+1].kind != tokOp ||
				!promMatchOps[toks[j+1].text] || toks[j+2].kind != tokString {
				return nil, 0, fmt.Errorf("a matcher that is not label op \"value\" in { }")
			}
			ms = append(ms, promMatcher{toks[j].text, toks[j+1].text, toks[j+2].text})
			j += 3
			if is(j, tokPunct, ",") {
				j++
			} else if !is(j, tokPunct, "}") {
				return nil, 0, fmt.Errorf("a matcher not followed by , or }")
			}
		}
		return ms, j + 1, nil
	}

	for i := 0; i < len(toks); {
		t := toks[i]
		word := strings.ToLower(t.text)
		switch {
		case t.kind == tokPunct && t.text == "{":
			ms, next, err := matchers(i)
			if err != nil {
				return nil, err
			}
			name := ""
			for _, m := range ms {
				if m.label == "__name__" && m.op == "=" {
					name = m.value
				}
			}
			if name == "" {
				return nil, fmt.Errorf("a selector without a metric name: {%v}", ms)
			}
			q.selectors = append(q.selectors, promSelector{metric: name, matchers: ms, pos: i})
			i = next
		case t.kind != tokIdent:
			i++
		case promUnsupported[word]:
			return nil, fmt.Errorf("%s is not followed by this reader", t.text)
		case word == "by" || word == "without":
			// sum(...) by (labels): the group is the ( ) before.
			if !is(i-1, tokPunct, ")") {
				return nil, fmt.Errorf("%s neither after an aggregation nor after its ( )", t.text)
			}
			labels, next, err := labelList(i+1, word)
			if err != nil {
				return nil, err
			}
			q.groupings = append(q.groupings, promGrouping{word, labels, match[i-1], i - 1})
			for c := range q.calls {
				if q.calls[c].to == i-1 && promAggregations[q.calls[c].fn] {
					q.calls[c].grouping = len(q.groupings) - 1
				}
			}
			i = next
		case promKeywords[word]:
			i++
		case promAggregations[word] && (isWord(i+1, "by") || isWord(i+1, "without")):
			// sum by (labels) (...)
			keyword := strings.ToLower(toks[i+1].text)
			labels, next, err := labelList(i+2, keyword)
			if err != nil {
				return nil, err
			}
			if !is(next, tokPunct, "(") {
				return nil, fmt.Errorf("%s %s (...) without its ( expression )", t.text, keyword)
			}
			q.groupings = append(q.groupings, promGrouping{keyword, labels, next, match[next]})
			q.calls = append(q.calls, promCall{word, next, match[next], len(q.groupings) - 1})
			i = next + 1
		case is(i+1, tokPunct, "("):
			fn := t.text
			if promAggregations[word] {
				fn = word
			}
			q.calls = append(q.calls, promCall{fn, i + 1, match[i+1], -1})
			i += 2
		default: // a metric name, its matchers and its range
			s := promSelector{metric: t.text, pos: i}
			i++
			if is(i, tokPunct, "{") {
				ms, next, err := matchers(i)
				if err != nil {
					return nil, err
				}
				for _, m := range ms {
					if m.label == "__name__" {
						return nil, fmt.Errorf("%s{__name__...}: two metric names", t.text)
					}
				}
				s.matchers, i = ms, next
			}
			q.selectors = append(q.selectors, s)
		}
	}
	if len(q.selectors) == 0 {
		return nil, fmt.Errorf("no metric in %q", expr)
	}
	return q, nil
}

// The reader of PromQL finds the metrics, matchers and groupings of the
// expressions a dashboard holds, and refuses what it cannot follow.
func TestParsePromQL(t *testing.T) {
	type group struct {
		labels  string
		metrics string
	}
	cases := []struct {
		expr      string
		metrics   string // metric names, space-separated
		matchers  string // label op value, space-separated
		groupings []group
		calls     string
		variables string
	}{
		{
			expr:      `sum by (error_type) (rate(analytics_event_failed_total{job=~"$job",instance=~"${instance}"}[$__rate_interval]))`,
			metrics:   "analytics_event_failed_total",
			matchers:  "job=~$job instance=~${instance}",
			groupings: []group{{"error_type", "analytics_event_failed_total"}},
			calls:     "sum rate",
			variables: "job instance __rate_interval",
		},
		{
			expr:      `histogram_quantile(0.99, sum by (le, analytics_event_outcome) (rate(x_seconds_bucket{analytics_event_outcome="delivered"}[5m])))`,
			metrics:   "x_seconds_bucket",
			matchers:  "analytics_event_outcome=delivered",
			groupings: []group{{"le analytics_event_outcome", "x_seconds_bucket"}},
			calls:     "histogram_quantile sum rate",
		},
		{ // the grouping after its aggregation covers its own ( ) only
			expr:      "sum(rate(a_total[5m])) by (x) / sum(b)",
			metrics:   "a_total b",
			groupings: []group{{"x", "a_total"}},
			calls:     "sum rate sum",
		},
		{
			expr:      "max(sum by (job, instance) (q_size) / sum by (job, instance) (q_capacity)) > bool 0.8",
			metrics:   "q_capacity q_size",
			groupings: []group{{"job instance", "q_size"}, {"job instance", "q_capacity"}},
			calls:     "max sum sum",
		},
		{ // durations, numbers, keywords and comments are no metrics
			expr:    "a offset 5m + Inf * 1e-3 - 0x1F and b unless c # d\n or e",
			metrics: "a b c e",
		},
		{
			expr:     `{__name__="a", x!~'y\'z', w!=` + "`v`}",
			metrics:  "a",
			matchers: "__name__=a x!~y'z w!=v",
		},
		{
			expr:      "SUM WITHOUT (x) (a:recorded:rate5m)",
			metrics:   "a:recorded:rate5m",
			groupings: []group{{"x", "a:recorded:rate5m"}},
			calls:     "sum",
		},
	}
	fields := func(s string) []string { // nil for none, as the reader's lists
		if s == "" {
			return nil
		}
		return strings.Fields(s)
	}
	for _, c := range cases {
		q, err := parsePromQL(c.expr)
		require.NoError(t, err, c.expr)
		assert.Equal(t, fields(c.metrics), q.metrics(), "metrics of %s", c.expr)
		var ms []string
		for _, s := range q.selectors {
			for _, m := range s.matchers {
				ms = append(ms, m.label+m.op+m.value)
			}
		}
		assert.Equal(t, fields(c.matchers), ms, "matchers of %s", c.expr)
		var gs []group
		for _, g := range q.groupings {
			gs = append(gs, group{strings.Join(g.labels, " "), strings.Join(q.metricsIn(g.from, g.to), " ")})
		}
		assert.Equal(t, c.groupings, gs, "groupings of %s", c.expr)
		var calls []string
		for _, call := range q.calls {
			calls = append(calls, call.fn)
		}
		assert.Equal(t, fields(c.calls), calls, "calls of %s", c.expr)
		assert.ElementsMatch(t, fields(c.variables), q.variables, "variables of %s", c.expr)
	}
	// An aggregation knows its grouping, whichever side it is written on.
	q, err := parsePromQL("histogram_quantile(0.5, sum(rate(h_bucket[5m])) by (le)) + sum(h_count)")
	require.NoError(t, err)
	require.Len(t, q.calls, 4)
	assert.Equal(t, 0, q.calls[1].grouping, "sum(...) by (le)")
	assert.Equal(t, -1, q.calls[3].grouping, "sum(h_count)")

	// Each is refused, and for its reason.
	for _, c := range []struct{ bad, why string }{
		{"a / on(x) b", "on is not followed"},
		{"a * ignoring(x) group_left b", "ignoring is not followed"},
		{"sum by x (a)", "by without its ( label"},
		{"sum by (x, 1) (a)", `holds "1", not a label name`},
		{`a{b="c"`, "not followed by , or }"},
		{`a{b=c}`, `not label op "value"`},
		{`a{b="c" d="e"}`, "not followed by , or }"},
		{"rate(a[5m]", "( not closed"},
		{"rate(a[5m]))", ") without its ("},
		{`{x="y"}`, "without a metric name"},
		{`a{__name__="b"}`, "two metric names"},
		{`label_replace(a, "dst", "$1", "src", "(.*)")`, "label_replace is not followed"},
		{`a{job=~"[[job]]"}`, "[[name]]"},
		{"a @ start()", "@ modifier"},
		{"rate(a[5m", "range not closed"},
		{`a{b="c}`, "string not closed"},
		{"1 + 2", "no metric"},
		{"a ! b", "unexpected '!'"},
		{"a by (x)", "by neither after an aggregation"},
	} {
		_, err := parsePromQL(c.bad)
		if assert.Error(t, err, "%s is refused", c.bad) {
			assert.Contains(t, err.Error(), c.why, "why %s is refused", c.bad)
		}
	}
}
