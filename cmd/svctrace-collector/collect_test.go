package main

import (
	"slices"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// TestSectionsCoverEveryName keeps the collector's table in step with the
// contract: one reader per section name, in the order of AllSections.
func TestSectionsCoverEveryName(t *testing.T) {
	var names []string
	for _, s := range sections(&collectorapi.Request{}, Options{}, &collectorapi.Sections{}, nil) {
		names = append(names, s.name)
	}
	if !slices.Equal(names, collectorapi.AllSections) {
		t.Errorf("sections %v, want %v", names, collectorapi.AllSections)
	}
}
