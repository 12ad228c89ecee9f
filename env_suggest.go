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
	overlap, overlaps := "", 0 // a known name that contains it or that it contains, and how many
	for _, name := range envNames {
		known := strings.TrimPrefix(name, envPrefix)
		d := editDistance(unknown, known)
		if d <= max(2, len(known)/4) && (best == "" || d < bestDistance) {
			best, bestDistance = name, d
		}
		if strings.Contains(known, unknown) || strings.Contains(unknown, known) {
			overlap, overlaps = name, overlaps+1
		}
	}
	if best != "" || len(unknown) < 3 || overlaps != 1 {
		return best // the nearest, or "": a short name, or not one overlap, is no guess
	}
	return overlap
}

// editDistance is the number of single-byte insertions, deletions,
// substitutions and swaps of adjacent bytes that turn a into b (the
// optimal string alignment distance).
func editDistance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j].
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
