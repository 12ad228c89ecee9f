package analytics

import "strings"

// suggestEnvName returns the variable an unknown ANALYTICS_ name was
// probably meant to be, or "": the known name it differs from only in
// case, else the nearest within a few typos (more for a longer name), else
// the one known name that contains it or that it contains ("TIMEOUT" for
// REQUEST_TIMEOUT, "ENDPOINT_URL" for ENDPOINT).
func suggestEnvName(name string) string {
	unknown := strings.TrimPrefix(strings.ToUpper(name), envPrefix)
	best, bestDistance := "", 0
	for _, name := range envNames {
		known := strings.TrimPrefix(name, envPrefix)
		d := editDistance(unknown, known)
		if d <= max(2, len(known)/4) && (best == "" || d < bestDistance) {
			best, bestDistance = name, d
		}
	}
	if best != "" || len(unknown) < 3 {
		return best
	}
	for _, name := range envNames {
		known := strings.TrimPrefix(name, envPrefix)
		if strings.Contains(known, unknown) || strings.Contains(unknown, known) {
			if best != "" {
				return "" // more than one: no guess
			}
			best = name
		}
	}
	return best
}

// editDistance is the number of single-byte insertions, deletions,
// substitutions and swaps of adjacent bytes that turn a into b (the
// optimal string alignment distance).
func editDistance(a, b string) int {
	// rows[i%3][j] is the distance between a[:i] and b[:j].
	var rows [3][]int
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur, prev, prev2 := rows[i%3], rows[(i-1)%3], rows[(i+1)%3]
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
	}
	return rows[len(a)%3][len(b)]
}
