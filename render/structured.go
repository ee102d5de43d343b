package render

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// JSON writes the trace as indented JSON (the v1alpha1 document).
func JSON(w io.Writer, t *report.ServiceTrace) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(t)
}

// YAML writes the trace as YAML with the same field names as JSON.
func YAML(w io.Writer, t *report.ServiceTrace) error {
	b, err := yaml.Marshal(t)
	if err != nil {
		return fmt.Errorf("encoding YAML: %w", err)
	}
	_, err = w.Write(b)
	return err
}

// Print renders t in format ("" text, "wide", "json", "yaml", "svg").
func Print(w io.Writer, t *report.ServiceTrace, format string, opts TextOptions) error {
	switch format {
	case FormatText:
		return Text(w, t, opts)
	case FormatWide:
		opts.Details = true
		return Text(w, t, opts)
	case FormatJSON:
		return JSON(w, t)
	case FormatYAML:
		return YAML(w, t)
	case FormatSVG:
		return SVG(w, t)
	}
	return fmt.Errorf("unknown output format %q", format)
}
