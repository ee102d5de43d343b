package render

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// PrintList renders several traces (one per backend Service of a front
// door): the text views one after the other, JSON and YAML as one
// ServiceTraceList document. An SVG holds one trace only.
func PrintList(w io.Writer, traces []*report.ServiceTrace, format string, opts TextOptions) error {
	switch format {
	case FormatText, FormatWide:
		for i, t := range traces {
			if i > 0 {
				if _, err := fmt.Fprintln(w); err != nil {
					return err
				}
			}
			if err := Print(w, t, format, opts); err != nil {
				return err
			}
		}
		return nil
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(report.NewServiceTraceList(traces))
	case FormatYAML:
		b, err := yaml.Marshal(report.NewServiceTraceList(traces))
		if err != nil {
			return fmt.Errorf("encoding YAML: %w", err)
		}
		_, err = w.Write(b)
		return err
	case FormatSVG:
		return fmt.Errorf("-o svg draws one trace, not %d", len(traces))
	}
	return fmt.Errorf("unknown output format %q", format)
}
