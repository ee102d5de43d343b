package input

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Closest returns up to n candidates nearest to name by edit distance, only
// those close enough to be a plausible typo (or containing name, or contained
// in it), nearest first, ties by name.
func Closest(name string, candidates []string, n int) []string {
	type scored struct {
		name string
		d    int
	}
	limit := max(1, len(name)/3)
	var hits []scored
	for _, c := range candidates {
		if c == name {
			continue
		}
		d := levenshtein(name, c)
		if d <= limit || strings.Contains(c, name) || strings.Contains(name, c) {
			hits = append(hits, scored{c, d})
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].d != hits[j].d {
			return hits[i].d < hits[j].d
		}
		return hits[i].name < hits[j].name
	})
	out := []string{}
	for i := 0; i < len(hits) && i < n; i++ {
		out = append(out, hits[i].name)
	}
	return out
}

// levenshtein is the edit distance between a and b, counting a swap of two
// neighbouring letters as one edit (optimal string alignment); names are ASCII.
func levenshtein(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
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
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// closestPods ranks Pods by how many selector labels they match (then by how
// close their values are) and returns the best n that match at least one key
// or carry at least one selector key.
func closestPods(selector map[string]string, pods []corev1.Pod, n int) []corev1.Pod {
	type scored struct {
		pod     corev1.Pod
		matches int
		dist    int
	}
	var hits []scored
	for _, p := range pods {
		s := scored{pod: p}
		present := 0
		for k, v := range selector {
			got, ok := p.Labels[k]
			switch {
			case ok && got == v:
				s.matches++
				present++
			case ok:
				present++
				if strings.Contains(got, v) || strings.Contains(v, got) {
					s.dist++ // web vs web-v2: a version suffix, not a stranger
				} else {
					s.dist += levenshtein(v, got)
				}
			default:
				s.dist += len(v) + len(k)
				// a key spelled slightly differently counts as close
				for pk := range p.Labels {
					if levenshtein(pk, k) <= 2 {
						s.dist -= len(k)
						present++
						break
					}
				}
			}
		}
		// Keep Pods that match a key, or whose values are typo-close.
		if present > 0 && (s.matches > 0 || s.dist <= closeEnough(selector)) {
			hits = append(hits, s)
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].matches != hits[j].matches {
			return hits[i].matches > hits[j].matches
		}
		if hits[i].dist != hits[j].dist {
			return hits[i].dist < hits[j].dist
		}
		return hits[i].pod.Name < hits[j].pod.Name
	})
	var out []corev1.Pod
	for i := 0; i < len(hits) && i < n; i++ {
		out = append(out, hits[i].pod)
	}
	return out
}

// closeEnough is the summed edit distance below which differing selector
// values still look like a typo.
func closeEnough(selector map[string]string) int {
	n := 0
	for _, v := range selector {
		n += max(3, len(v)/2)
	}
	return n
}

// LabelDiff says, for each selector key, what the Pod has instead:
// "app=web-v2 (want web)", "tier=<missing> (want front)".
func LabelDiff(selector map[string]string, podLabels map[string]string) []string {
	keys := make([]string, 0, len(selector))
	for k := range selector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		want := selector[k]
		got, ok := podLabels[k]
		switch {
		case !ok:
			out = append(out, k+"=<missing> (want "+want+")")
		case got != want:
			out = append(out, k+"="+got+" (want "+want+")")
		}
	}
	return out
}
